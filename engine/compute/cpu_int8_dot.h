// 8-bit activations, as llama.cpp computes products with quantised weights: each token's
// activations are first quantised to 8 bits per block of 32 (one float scale per block), then
// every block's dot product is a sum of int8 x int8 products taken in integer arithmetic and
// scaled once by (weight scale x activation scale). That reads the same weight bytes as the
// float path but spends far fewer instructions per weight; the price is the activations'
// rounding error (the "exact float" path keeps them in float32). The products themselves are in
// cpu_int8_interleaved.h (Q4_0, Q5_0, Q8_0) and cpu_kquant_interleaved.h (Q4_K, Q6_K).
#pragma once

#include <cstdint>

#include "engine/gguf/ggml_types.h"

namespace servescope::compute {

// 32 activations as int8 with one float scale: value = q * d. `offset[i]` is -8 times the sum of
// qs[4i..4i+3]: a Q4_0 weight is its stored nibble minus 8, so the integer kernels can multiply
// the nibbles as unsigned bytes and start from these (computed once per token, not per row).
struct ActivationBlock {
  float d = 0.0f;
  int8_t qs[gguf::kQuantBlock] = {};
  int32_t offset[gguf::kQuantBlock / 4] = {};
};

// Quantises n floats (n a multiple of 32) to n / 32 blocks: d = max|x| / 127, q = round(x / d).
void quantize_activations(const float* x, int64_t n, ActivationBlock* out);

}  // namespace servescope::compute
