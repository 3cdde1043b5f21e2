// Q4_0, Q8_0 and Q4_K weights against exact float activations, on the rows interleaved 16 at a
// time that the 8-bit kernels use (cpu_int8_interleaved.h's and cpu_kquant_interleaved.h's
// layouts). One 512-bit register holds 16
// rows' weight for one column, so a decode step multiplies it with the token's activation
// broadcast to all lanes: no horizontal sums, and each block's scale applied once per 16 rows.
//
// The weights become floats without permutes (which share the two FMA pipes of a Zen 4 or
// Intel core): a weight's bits are masked in place and ORed under the exponent of 2^23, so the
// float reads 2^23 + (weight + offset) x 2^s, and one subtraction on the adder pipes leaves
// weight x 2^s exactly. The activation it meets was scaled by 2^-s beforehand (prepared once
// per product), so each product weight x activation is the exact one.
//
// Every (row, token) result is, bit for bit, the same for any number of tokens, rows and
// threads and for every variant (portable, AVX-512):
//   total = 0; for each block b:
//     chain k = 0..3: a[k] = 0, then a[k] = fma(w_e, x_e, a[k]) over the block's elements e
//                     of byte k of each 4-byte chunk, chunk after chunk (Q4_0: a byte's low
//                     nibble, then its high one)
//     total = fma(d_b, (a[0] + a[1]) + (a[2] + a[3]), total)
// and for Q4_K the same per sub-block j of 32 columns (its unsigned nibbles in the chains), then
//     total = fma(d x scale_j, chains' sum, total); total = fma(-(dmin x min_j), sum of x_j, total)
// with sum of x_j the token's 32 activations added in order.
// (exact products: only an activation below 2^-100 in size, scaled into the subnormals, could
// round differently.) A prefill's tokens go through dequantised tiles instead
// (interleaved_to_panels), as row-major weights do.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/gguf/ggml_types.h"

namespace servescope::compute {

// Whether the exact-activation backend stores `type` interleaved on this CPU: Q4_0, Q8_0 and
// Q4_K where AVX-512 runs (the kernels are written for 512-bit registers only).
bool has_exact_interleaved_kernel(gguf::GgmlType type);

// Floats prepare_exact_activations writes per token: the `cols` activations, and for Q4_K
// their sums per 32.
int64_t exact_prepared_floats(gguf::GgmlType type, int64_t cols);

// Token t's `cols` activations (at x + t * x_stride) scaled by the powers of two that `type`'s
// kernels leave on the weights (and Q4_K's sums), into prepared + t * exact_prepared_floats.
void prepare_exact_activations(gguf::GgmlType type, const float* x, int64_t x_stride,
                               int64_t tokens, int64_t cols, float* prepared);

// out[t * out_stride + r] for rows [first_row, end_row) (multiples of 16 except a last end) and
// tokens [0, tokens), from prepare_exact_activations' rows.
using ExactInterleavedKernel = void (*)(const uint8_t* packed, int64_t cols, int64_t first_row,
                                        int64_t end_row, const float* prepared, int64_t tokens,
                                        float* out, int64_t out_stride);
// The fastest variant for Q4_0, Q8_0 or Q4_K on this CPU.
ExactInterleavedKernel exact_interleaved_kernel(gguf::GgmlType type);
// Every variant this CPU runs, portable first, so tests can hold each against the others.
std::vector<ExactInterleavedKernel> exact_interleaved_kernel_variants(gguf::GgmlType type);

// Rows [first_row, first_row + rows) (first_row a multiple of 16) of an interleaved Q4_0, Q8_0
// or Q4_K matrix dequantised into the F32 panel layout panel_layout(F32, rows, cols) at `panels`,
// as dequantize_to_panels does for row-major weights (the same values).
void interleaved_to_panels(gguf::GgmlType type, const uint8_t* packed, int64_t cols,
                           int64_t first_row, int64_t rows, float* panels);

}  // namespace servescope::compute
