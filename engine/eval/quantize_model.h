// Re-encodes a model's weights in another element type, as llama.cpp's quantize tool does for
// its "pure" types: every 2-D matrix whose rows are whole blocks of the target type takes that
// type, 1-D tensors (norm weights, biases) stay F32, and all metadata is copied with
// general.file_type set to the new type. The encodings are GGML's reference quantisers
// (gguf::quantize_row), so the file loads in other GGUF tools.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/ggml_types.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"

namespace servescope::eval {

// "f32", "f16", "q8_0", "q4_0" (any case) -> the GGML type; InputError listing them otherwise.
gguf::GgmlType parse_weight_type(std::string_view name);
// The lower-case label parse_weight_type reads: "q8_0".
std::string weight_type_label(gguf::GgmlType type);
// "f32", "f16", "q8_0" (any case) -> a KV cache element type; InputError listing them
// otherwise. Its label is weight_type_label's.
gguf::GgmlType parse_kv_type(std::string_view name);

// llama.cpp's general.file_type (llama_ftype) for a file whose matrices are `type`:
// ALL_F32 = 0, MOSTLY_F16 = 1, MOSTLY_Q4_0 = 2, MOSTLY_Q8_0 = 7. InputError for other types.
uint32_t llama_file_type(gguf::GgmlType type);

// Whether quantize_model gives `tensor` the target type (else it is stored as F32).
bool takes_target_type(const gguf::TensorInfo& tensor, gguf::GgmlType target);

// The tensor's values as float32, whatever its (supported) type.
std::vector<float> dequantize_tensor(const gguf::TensorInfo& tensor);

// Called after each tensor: `done` of `total` tensors, the name of the one just encoded.
using QuantizeProgress =
    std::function<void(int64_t done, int64_t total, const std::string& tensor_name)>;

// A writer holding `source`'s metadata and tensors re-encoded for `target` (F32, F16, Q8_0 or
// Q4_0). InputError when a source tensor is already Q8_0 or Q4_0: re-quantising would stack a
// second rounding error on the first, so the message asks for the F32 or F16 file.
gguf::GgufWriter quantize_model(const gguf::GgufFile& source, gguf::GgmlType target,
                                const QuantizeProgress& on_tensor = {});

}  // namespace servescope::eval
