// What a KV cache type costs in precision: the keys and values a prompt leaves in an F16 or
// Q8_0 cache against those of an F32 cache, per layer, for the quantisation panel.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/eval/tensor_error.h"
#include "engine/model/transformer.h"

namespace servescope::eval {

struct KvLayerError {
  int64_t layer = 0;
  // What the cache of the chosen type holds after the prompt, against the F32 cache after the
  // same prompt: its rounding plus the error the earlier layers' rounded caches passed on.
  TensorError keys;
  TensorError values;
  // The F32 cache's rows rounded to the chosen type: the rounding alone. Equal to keys/values
  // in layer 0, whose inputs do not depend on any cache.
  TensorError keys_rounding_only;
  TensorError values_rounding_only;
};

struct KvErrorReport {
  gguf::GgmlType kv_type = gguf::GgmlType::F16;
  int64_t tokens = 0;  // prompt tokens whose keys and values were compared
  std::vector<KvLayerError> layers;
};

// Runs `ids` (at most the model's context; InputError otherwise) once with an F32 cache and
// once with a `kv_type` cache (F16 or Q8_0; InputError for others) and compares, layer by
// layer. The transformer's own KV type is left as it was.
KvErrorReport measure_kv_error(model::Transformer& transformer, std::span<const int32_t> ids,
                               gguf::GgmlType kv_type);

}  // namespace servescope::eval
