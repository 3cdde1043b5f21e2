// Models built in memory rather than opened from a path: a GGUF image (e.g. a quantised
// variant that was never written to disk) made ready to run on a backend.
#pragma once

#include <memory>

#include "engine/compute/backend.h"
#include "engine/eval/quantize_model.h"
#include "engine/gguf/ggml_types.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model.h"

namespace servescope::eval {

// As model::load_model, for a GgufFile already in hand (a BackendKind converts to a choice
// with the defaults; the desktop app passes its activations option).
std::unique_ptr<model::Model> load_model_from_gguf(gguf::GgufFile file,
                                                   const compute::BackendChoice& backend);

// `source` (F32 or F16) quantised in memory to `target` and loaded; its file name reads
// "<source name> as q8_0".
std::unique_ptr<model::Model> load_quantised_variant(const gguf::GgufFile& source,
                                                     gguf::GgmlType target,
                                                     compute::BackendKind backend);
// The same for a scheme (a pure type or a mixed recipe such as q4_k_m): "... as q4_k_m".
std::unique_ptr<model::Model> load_quantised_variant(const gguf::GgufFile& source,
                                                     const QuantizeScheme& scheme,
                                                     compute::BackendKind backend);

}  // namespace servescope::eval
