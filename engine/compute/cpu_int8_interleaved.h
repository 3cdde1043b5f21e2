// Q4_0 and Q8_0 weights with 8-bit activations, rows interleaved 16 at a time (as llama.cpp
// repacks them when it loads a model). Each block of 32 columns is summed whole in integers for
// 16 rows in one register, then converted and scaled once: row-by-row kernels convert and scale
// every group of four weights of every row and token, four vector operations per 64
// multiply-adds; here a block of 16 rows and one token takes eight integer dots and three float
// operations for 512 multiply-adds.
//
// Every (row, token) result is, bit for bit, the same for any number of tokens, rows, threads
// and for every kernel variant (portable, AVX2, AVX-512 VNNI):
//   sum = 0; for each block b: sum = fma(d_w[b] * d_x[b], float(integer dot of block b), sum)
// so a decode step's token gets what it would get alone, or in a prefill.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/compute/cpu_int8_dot.h"
#include "engine/gguf/ggml_types.h"

namespace servescope::compute {

constexpr int64_t kInterleavedRows = 16;

// One block of 32 columns of 16 rows, Q4_0: the rows' fp16 scales, then their 16 bytes of
// nibbles in four chunks: chunk c holds bytes 4c..4c+3 of each row's block, row after row. A
// byte's low nibble is element 4c + k, its high nibble element 16 + 4c + k (GGML's packing), so
// the low nibbles of a chunk are elements 4c..4c+3 of 16 rows: one integer dot's operand.
struct InterleavedQ4Block {
  uint16_t d[kInterleavedRows];
  uint8_t qs[4][kInterleavedRows][4];
};
static_assert(sizeof(InterleavedQ4Block) == 288, "16 rows of 18-byte Q4_0 blocks");

// The same for Q8_0: group i holds elements 4i..4i+3 of each row (signed bytes).
struct InterleavedQ8Block {
  uint16_t d[kInterleavedRows];
  int8_t qs[8][kInterleavedRows][4];
};
static_assert(sizeof(InterleavedQ8Block) == 544, "16 rows of 34-byte Q8_0 blocks");

// The same for Q5_0: the quants' low four bits as Q4_0's, and their fifth bits four to a byte per
// row: bit c of byte k is element 4c + k's, bit 4 + c element 16 + 4c + k's.
struct InterleavedQ5Block {
  uint16_t d[kInterleavedRows];
  uint8_t qh[kInterleavedRows][4];
  uint8_t qs[4][kInterleavedRows][4];
};
static_assert(sizeof(InterleavedQ5Block) == 352, "16 rows of 22-byte Q5_0 blocks");

// Whether `type` has an interleaved layout and kernels (Q4_0, Q5_0, Q8_0, Q4_K, Q6_K: the
// functions below take these, and a backend with 8-bit activations stores them so).
bool has_interleaved_kernel(gguf::GgmlType type);

// Rows (GGML layout, rows x cols) of `type` interleaved: group g's block b at index
// g * blocks + b (K-quants: blocks of 256 columns); the last group's missing rows are zeros.
std::vector<uint8_t> interleave_rows(gguf::GgmlType type, const uint8_t* data, int64_t rows,
                                     int64_t cols);

// Row `row` of an interleaved matrix as float32 (an embedding look-up), as
// gguf::dequantize_row gives it.
void interleaved_row(gguf::GgmlType type, const uint8_t* packed, int64_t cols, int64_t row,
                     float* dst);

// What each token's block adds to the integer dot, which the kernels start from: Q4_0 stores a
// weight plus 8 (unsigned nibbles), so -8 x the sum of the block's 32 activations (Q5_0: plus
// 16, -16 x the sum); Q8_0's
// 512-bit kernel multiplies the weight plus 128, so -128 x that sum; Q4_K: the sum itself (its
// minimums' factor); Q6_K: 0 (its kernels read the block's halves).
int32_t interleaved_block_offset(gguf::GgmlType type, const ActivationBlock& x);

// out[t * out_stride + r] for rows [first_row, end_row) (multiples of 16 except a last end) and
// tokens [0, tokens): token t's blocks at x + t * blocks, their interleaved_block_offset at
// x_offsets + t * blocks.
using InterleavedKernel = void (*)(const uint8_t* packed, int64_t cols, int64_t first_row,
                                   int64_t end_row, const ActivationBlock* x,
                                   const int32_t* x_offsets, int64_t tokens, float* out,
                                   int64_t out_stride);
// The fastest variant for `type` on this CPU.
InterleavedKernel interleaved_kernel(gguf::GgmlType type);
// Every variant for `type` this CPU can run, portable first, so tests can hold each against
// the others.
std::vector<InterleavedKernel> interleaved_kernel_variants(gguf::GgmlType type);

}  // namespace servescope::compute
