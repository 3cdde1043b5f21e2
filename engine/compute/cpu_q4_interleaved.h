// Q4_0 weights with 8-bit activations, rows interleaved 16 at a time (as llama.cpp repacks Q4_0
// when it loads a model). Each block of 32 columns is summed whole in integers for 16 rows in
// one register, then converted and scaled once: the row-by-row kernels (cpu_int8_dot.h) convert
// and scale every group of four weights of every row and token, four vector operations per 64
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

namespace servescope::compute {

constexpr int64_t kInterleavedRows = 16;

// One block of 32 columns of 16 rows: the rows' fp16 scales, then their 16 bytes of nibbles in
// four chunks: chunk c holds bytes 4c..4c+3 of each row's block, row after row. A byte's low
// nibble is element 4c + k, its high nibble element 16 + 4c + k (GGML's Q4_0 packing), so the
// low nibbles of a chunk are elements 4c..4c+3 of 16 rows: one integer dot's operand.
struct InterleavedQ4Block {
  uint16_t d[kInterleavedRows];
  uint8_t qs[4][kInterleavedRows][4];
};
static_assert(sizeof(InterleavedQ4Block) == 288, "16 rows of 18-byte Q4_0 blocks");

// Q4_0 rows (GGML layout, rows x cols) interleaved: group g's block b at index g * blocks + b;
// the last group's missing rows are zeros.
std::vector<uint8_t> interleave_q4_0(const uint8_t* data, int64_t rows, int64_t cols);

// Row `row` of an interleaved matrix as float32 (an embedding look-up), as
// gguf::dequantize_row gives it.
void interleaved_q4_0_row(const uint8_t* packed, int64_t cols, int64_t row, float* dst);

// out[t * out_stride + r] for rows [first_row, end_row) (multiples of 16 except a last end) and
// tokens [0, tokens): token t's blocks at x + t * blocks, and x_offsets[t * blocks + b] = -8 x
// the sum of block b's 32 activations (a stored nibble is its weight plus 8).
using InterleavedQ4Kernel = void (*)(const uint8_t* packed, int64_t cols, int64_t first_row,
                                     int64_t end_row, const ActivationBlock* x,
                                     const int32_t* x_offsets, int64_t tokens, float* out,
                                     int64_t out_stride);
// The fastest variant on this CPU.
InterleavedQ4Kernel interleaved_q4_0_kernel();
// Every variant this CPU can run, portable first, so tests can hold each against the others.
std::vector<InterleavedQ4Kernel> interleaved_q4_0_kernel_variants();

}  // namespace servescope::compute
