// Integer dot products for Q8_0 and Q4_0 weights, as llama.cpp computes them: each token's
// activations are first quantised to 8 bits per block of 32 (one float scale per block), then
// every block's dot product is a sum of int8 x int8 products taken in integer arithmetic and
// scaled once by (weight scale x activation scale). That reads the same weight bytes as the
// float path but spends about half the instructions per weight; the price is the activations'
// rounding error (the "exact float" path keeps them in float32).
#pragma once

#include <cstdint>

#include "engine/gguf/ggml_types.h"

namespace servescope::compute {

// 32 activations as int8 with one float scale: value = q * d.
struct ActivationBlock {
  float d = 0.0f;
  int8_t qs[gguf::kQuantBlock] = {};
};

// Quantises n floats (n a multiple of 32) to n / 32 blocks: d = max|x| / 127, q = round(x / d).
void quantize_activations(const float* x, int64_t n, ActivationBlock* out);

// Rows [0, n_rows) of a Q8_0 or Q4_0 matrix (row r at rows + r * row_stride) against several
// quantised tokens: out[t * out_stride + r] = sum over blocks of d_w * d_x * sum_j w_j * q_j,
// for token t's blocks at x + t * x_stride. Each (row, token) sum is taken in the same order
// whatever n_rows and tokens are; a lone token takes four rows side by side.
using RowDotInt8Tokens = void (*)(const uint8_t* rows, uint64_t row_stride, int64_t n_rows,
                                  const ActivationBlock* x, int64_t x_stride, int64_t tokens,
                                  int64_t n, float* out, int64_t out_stride);
// The kernel for Q8_0 or Q4_0 on this CPU (AVX-VNNI, AVX2, or portable).
RowDotInt8Tokens row_dot_int8_tokens_for(gguf::GgmlType type);
// Whether `type` has an integer kernel (Q8_0, Q4_0).
bool has_int8_kernel(gguf::GgmlType type);

}  // namespace servescope::compute
