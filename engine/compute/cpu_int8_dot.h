// Integer dot products for Q8_0 and Q4_0 weights, as llama.cpp computes them: each token's
// activations are first quantised to 8 bits per block of 32 (one float scale per block), then
// every block's dot product is a sum of int8 x int8 products taken in integer arithmetic and
// scaled once by (weight scale x activation scale). That reads the same weight bytes as the
// float path but spends about half the instructions per weight; the price is the activations'
// rounding error (the "exact float" path keeps them in float32).
// The CPU backend multiplies Q4_0 and Q8_0 with 8-bit activations on rows interleaved 16 at a
// time instead (cpu_int8_interleaved.h); it uses quantize_activations from here.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/gguf/ggml_types.h"

namespace servescope::compute {

// 32 activations as int8 with one float scale: value = q * d. `offset[i]` is -8 times the sum of
// qs[4i..4i+3]: a Q4_0 weight is its stored nibble minus 8, so sum w * q over a group of four
// equals (nibbles . q) + offset[i], which lets the many-token kernel multiply the nibbles as
// unsigned bytes directly (computed once per token instead of once per row and token).
struct ActivationBlock {
  float d = 0.0f;
  int8_t qs[gguf::kQuantBlock] = {};
  int32_t offset[gguf::kQuantBlock / 4] = {};
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
// The kernel for Q8_0 or Q4_0 on this CPU (AVX-512 VNNI, AVX-VNNI, AVX2, or portable).
RowDotInt8Tokens row_dot_int8_tokens_for(gguf::GgmlType type);
// Every variant of that kernel this CPU can run, portable first (AVX2, AVX-VNNI, AVX-512 VNNI
// tiles follow where supported), so tests can hold each against the others.
std::vector<RowDotInt8Tokens> int8_kernel_variants(gguf::GgmlType type);
// Whether `type` has an integer kernel (Q8_0, Q4_0; Q4_K in cpu_kquant_int8.cpp).
bool has_int8_kernel(gguf::GgmlType type);

// Two consecutive blocks of one token laid out for 512-bit registers (the many-token kernel on
// CPUs with AVX-512 VNNI): bytes 0-31 the even block, 32-63 the odd one (zero past the last
// block); `extra` is what the weight type's integer dot starts from or multiplies (Q4_0: the
// blocks' offsets; Q8_0: q + 128 as unsigned bytes); `d` the scales, eight lanes each.
struct alignas(64) TokenBlockPair {
  int8_t q[2 * gguf::kQuantBlock];
  uint8_t extra[2 * gguf::kQuantBlock];
  float d[16];
};

// The many-token kernel over packed tokens: out[t * out_stride + r] for rows [0, n_rows) and
// tokens [0, tokens), with `pairs` = ceil(n / 64) block pairs per token, token t's at
// x + t * pairs. Each (row, token) result equals row_dot_int8_tokens_for's bit for bit.
using Int8PairKernel = void (*)(const uint8_t* rows, uint64_t row_stride, int64_t n_rows,
                                const TokenBlockPair* x, int64_t tokens, int64_t n, float* out,
                                int64_t out_stride);
// The kernel for Q8_0 or Q4_0, or null where this CPU has no AVX-512 VNNI.
Int8PairKernel int8_pair_kernel_for(gguf::GgmlType type);
// Packs `tokens` quantised tokens (token t's n / 32 blocks at x + t * x_stride) for `type`'s
// pair kernel into out (tokens * ceil(n / 64) pairs).
void pack_token_pairs(gguf::GgmlType type, const ActivationBlock* x, int64_t x_stride,
                      int64_t tokens, int64_t n, TokenBlockPair* out);

}  // namespace servescope::compute
