// Re-encodes a model's weights in other element types, as llama.cpp's quantize tool does:
// either one type for every matrix (its --pure mode) or one of its mixed recipes (q4_k_m,
// q5_k_m), which spend more bits on the tensors that matter most. 1-D tensors (norm weights,
// biases) stay F32; all metadata is copied with general.file_type set as llama.cpp sets it.
//
// Which tensor gets which type (llama.cpp's llama_tensor_get_type for llama models):
//   pure T         every 2-D matrix: T
//   q4_k_m (15)    output.weight (token_embd.weight when the output is tied to it): Q6_K;
//                  attn_v.weight and ffn_down.weight: Q6_K on the "use_more_bits" layers (the
//                  first and last eighth, and every third layer between), Q4_K elsewhere;
//                  attn_qkv.weight (fused): Q5_K; every other matrix: Q4_K
//   q5_k_m (17)    the same with Q5_K as the base type and Q6_K for attn_qkv.weight
// A matrix whose rows are not whole blocks of its type falls back as llama.cpp does: Q2_K and
// Q3_K to Q4_0, Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0 (rows of 32-element blocks); an
// output.weight whose rows are not whole super-blocks is Q8_0; rows that fit no block are
// stored F32.
//
// The 32-element types use GGML's reference quantisers bit for bit; the K-quants use
// ServeScope's own search (gguf::quantize_row), so the file loads in other GGUF tools.
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

// "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k" .. "q6_k" (any case)
// -> the GGML type; InputError listing them otherwise.
gguf::GgmlType parse_weight_type(std::string_view name);
// The lower-case label parse_weight_type reads: "q8_0".
std::string weight_type_label(gguf::GgmlType type);
// "f32", "f16", "q8_0" (any case) -> a KV cache element type; InputError listing them
// otherwise. Its label is weight_type_label's.
gguf::GgmlType parse_kv_type(std::string_view name);

// llama.cpp's general.file_type (llama_ftype) for a file whose matrices are `type`: ALL_F32 0,
// F16 1, Q4_0 2, Q4_1 3, Q8_0 7, Q5_0 8, Q5_1 9, Q2_K 10, Q3_K 11 (Q3_K_S), Q4_K 14 (Q4_K_S),
// Q5_K 16 (Q5_K_S), Q6_K 18, BF16 32. InputError for other types.
uint32_t llama_file_type(gguf::GgmlType type);

// How quantize_model chooses types: one for all matrices, or a llama.cpp mixed recipe.
enum class QuantRecipe { kPure, kQ4_K_M, kQ5_K_M };

struct QuantizeScheme {
  gguf::GgmlType type = gguf::GgmlType::F32;  // pure: every matrix; recipes: the base type
  QuantRecipe recipe = QuantRecipe::kPure;
};

// parse_weight_type's labels (pure) plus "q4_k_m" and "q5_k_m"; InputError listing them.
QuantizeScheme parse_quantize_scheme(std::string_view name);
// "q4_k_m", or weight_type_label(type) for a pure scheme.
std::string scheme_label(const QuantizeScheme& scheme);
// general.file_type: llama_file_type for pure schemes, 15 (Q4_K_M) or 17 (Q5_K_M).
uint32_t scheme_file_type(const QuantizeScheme& scheme);

// llama.cpp's use_more_bits: whether layer `layer` of `n_layers` gets Q6_K for attn_v and
// ffn_down in the _M recipes (the first and last eighth of the layers, every third between).
bool uses_more_bits(int64_t layer, int64_t n_layers);

// Whether quantize_model gives `tensor` the pure target type itself (a 2-D matrix whose rows
// are whole blocks of it); see tensor_types for what the others get.
bool takes_target_type(const gguf::TensorInfo& tensor, gguf::GgmlType target);

// The type quantize_model stores each of `source`'s tensors in, in file order.
std::vector<gguf::GgmlType> tensor_types(const gguf::GgufFile& source,
                                         const QuantizeScheme& scheme);

// The tensor's values as float32, whatever its (supported) type.
std::vector<float> dequantize_tensor(const gguf::TensorInfo& tensor);

// Called after each tensor: `done` of `total` tensors, the name of the one just encoded.
using QuantizeProgress =
    std::function<void(int64_t done, int64_t total, const std::string& tensor_name)>;

// A writer holding `source`'s metadata and tensors re-encoded by `scheme`. InputError when a
// source tensor is already block-quantised: re-quantising would stack a second rounding error
// on the first, so the message asks for the F32 or F16 file.
gguf::GgufWriter quantize_model(const gguf::GgufFile& source, const QuantizeScheme& scheme,
                                const QuantizeProgress& on_tensor = {});
// The pure scheme of `target`.
gguf::GgufWriter quantize_model(const gguf::GgufFile& source, gguf::GgmlType target,
                                const QuantizeProgress& on_tensor = {});

}  // namespace servescope::eval
