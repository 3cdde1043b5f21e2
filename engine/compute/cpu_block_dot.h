// Dot products of one weight row, kept in its GGML storage type, with a float32 vector. Decode
// multiplies every weight by a single token's activations, so reading each stored byte once
// (no dequantised copy written and read back) is what makes small-batch decode fast.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/gguf/ggml_types.h"

namespace servescope::compute {

// A kernel computing sum_j W[j] * x[j] over the n elements of a row stored in one type.
using RowDot = float (*)(const uint8_t* row, const float* x, int64_t n);
// The kernel for `type` (any gguf::is_supported type) on this CPU: picked once per product, not
// per row. Q4_1, Q5_0, Q5_1 and the K-quants decode in registers with AVX2 or AVX-512
// (cpu_kquant_dot.h); BF16, and they on other CPUs, dequantise a chunk of the row, then take a
// float dot.
RowDot row_dot_for(gguf::GgmlType type);

// One weight row against several tokens: out[t * out_stride] = sum_j W[j] * x[t * x_stride + j]
// for t < tokens. The row is read from memory once for all tokens (a decode step of a batch);
// every token's sum is taken in the same order whatever `tokens` is, so a token's result does
// not depend on the batch it is in. (The CPU backend's products with F32/F16 weights take the
// panel kernels of cpu_panel_dot.h instead; their row kernels here stay for callers of any type.)
using RowDotTokens = void (*)(const uint8_t* row, const float* x, int64_t x_stride, int64_t tokens,
                              int64_t n, float* out, int64_t out_stride);
RowDotTokens row_dot_tokens_for(gguf::GgmlType type);

// The same over rows [0, n_rows) of a matrix (row r at rows + r * row_stride; its results at
// out[t * out_stride + r]), for kernels that gain from taking several rows at once: a lone
// token streams four rows side by side, which keeps more memory reads in flight. Each (row,
// token) sum is taken exactly as row_dot_tokens_for's kernel takes it. Null where the type has
// no such kernel on this CPU (then call the row kernel per row).
using RowsDotTokens = void (*)(const uint8_t* rows, uint64_t row_stride, int64_t n_rows,
                               const float* x, int64_t x_stride, int64_t tokens, int64_t n,
                               float* out, int64_t out_stride);
RowsDotTokens rows_dot_tokens_for(gguf::GgmlType type);
// Every variant of that kernel for Q8_0 or Q4_0 this CPU can run (AVX2, then AVX-512; the last
// is the one picked), so tests can hold each against the others bit for bit; empty without AVX2.
std::vector<RowsDotTokens> quant_rows_kernel_variants(gguf::GgmlType type);

// Every half-precision value as float (2^16 entries, exact conversions): block kernels look their
// scales up here, a load that a broadcast reads from memory, instead of converting in registers.
const float* fp16_to_float_table();

// gguf::dequantize_row, with the hardware's half-precision conversion where it has one (the
// CPU reads F16 KV-cache rows this way in every decode step).
void dequantize_row_fast(gguf::GgmlType type, const uint8_t* row, float* dst, int64_t n);

// gguf::quantize_row, bit for bit, with the hardware's conversion to half precision where it
// has one (every decode step stores each new token's keys and values this way in an F16 cache).
void quantize_row_fast(gguf::GgmlType type, const float* src, uint8_t* row, int64_t n);

}  // namespace servescope::compute
