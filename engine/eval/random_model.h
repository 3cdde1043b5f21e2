// Llama models of a chosen size filled with random weights, for timing experiments: decode time
// against weight bytes shows the memory bandwidth, which needs models larger than the caches.
// The text such a model writes is meaningless; its metadata says so (model::kRandomWeightsKey).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "engine/gguf/ggml_types.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"

namespace servescope::eval {

// The hyper-parameters of a llama model (RMSNorm, RoPE, grouped-query attention, SwiGLU).
struct RandomModelShape {
  int64_t dim = 0;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t ffn_dim = 0;
  int64_t context_length = 512;
};

struct RandomModelPreset {
  std::string_view name;  // "25M": the parameter count it approximates (with a 2048 vocabulary)
  RandomModelShape shape;
};

// 25M, 100M, 400M, 1B.
std::span<const RandomModelPreset> random_model_presets();
// The preset's shape; InputError listing the presets for an unknown name.
RandomModelShape random_model_preset(std::string_view name);

// InputError with a one-line reason when the shape cannot be built or loaded: non-positive
// sizes, dim not a multiple of heads, heads not a multiple of kv-heads, odd head size (RoPE),
// context outside 16..32768, or dim / ffn not whole blocks of a block-quantised `type`.
void validate_shape(const RandomModelShape& shape, gguf::GgmlType type);

// Elements of all tensors of the model: token embedding and output (vocab x dim each), per
// layer 2 x dim x dim (q, output) + 2 x dim x kv_dim (k, v) + 3 x dim x ffn + 2 x dim (norms),
// and the final norm.
int64_t parameter_count(const RandomModelShape& shape, int64_t vocab_size);

// Bytes of all tensor data: the matrices in `type`, the norms in F32 (alignment not counted).
uint64_t random_model_weight_bytes(const RandomModelShape& shape, int64_t vocab_size,
                                   gguf::GgmlType type);

// The weights' standard deviation: 1/sqrt(fan_in) for every matrix (fan_in = its row length,
// GGUF's ne0), so each product keeps its input's scale; norm weights are exactly 1.
double random_weight_std(int64_t fan_in);

struct RandomModelSpec {
  RandomModelShape shape;
  gguf::GgmlType type = gguf::GgmlType::F32;  // of the matrices; norms stay F32
  uint64_t seed = 1;
  std::string label;  // in general.name: "servescope-random-<label>"
  // 0: the tokenizer's vocabulary. Larger: the tokenizer's tokens followed by unused ones
  // ("<unused_N>", token type unused: they never come out of encoding and decode to no text),
  // so that embedding and output matrices of a large vocabulary can be timed.
  int64_t vocab_size = 0;
};

// The vocabulary the model of `spec` has with tokenizer `tokenizer_source`; InputError when
// spec.vocab_size is smaller than the tokenizer's or above 1M tokens.
int64_t random_model_vocab(const RandomModelSpec& spec, const gguf::GgufFile& tokenizer_source);

// A writer for the model: llama metadata for `spec`, the tokenizer metadata (tokenizer.*) of
// `tokenizer_source`, model::kRandomWeightsKey = true, and every tensor streamed: its values
// drawn from a generator seeded by (seed, tensor index) and encoded block by block with
// gguf::quantize_row while the file is written. Equal specs give identical files.
// InputError when the source has no tokenizer or
// the shape is invalid.
gguf::GgufWriter random_model_writer(const RandomModelSpec& spec,
                                     const gguf::GgufFile& tokenizer_source);

}  // namespace servescope::eval
