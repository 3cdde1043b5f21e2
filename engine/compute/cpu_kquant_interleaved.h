// Q4_K and Q6_K weights with 8-bit activations, rows interleaved 16 at a time as Q4_0 and Q8_0
// are (cpu_int8_interleaved.h, whose functions call these for the two types). A decode token
// multiplies 16 rows in one register per integer dot, with no per-row sums to fold at the end:
// for the bundled model's 256-column rows that fold and a row's scale unpacking cost more than
// its dots in the row-by-row kernels these replaced (2-3x slower, on AVX2 as on AVX-512).
//
// The layouts hold the same bits as GGML's blocks (scales unpacked to a byte each, the quants
// regrouped), in the same bytes for Q6_K and 2368 against 2304 per 16 rows of a Q4_K
// super-block. Every (row, token) result is, bit for bit, the same for any number of tokens,
// rows and threads and for every variant (portable, AVX2, AVX-512 VNNI):
//   Q4_K, per sub-block j of 32: sum = fma(S_j * d_x, float(sum of q x s), sum);
//                                sum = fma(-M_j, d_x * float(sum of s), sum)
//   Q6_K, per sub-block k of 16: sum = fma(S_k * d_x, float(sum of (q - 32) x s), sum)
// with S = d x the sub-block's integer scale, M = dmin x its integer minimum (both exact in
// float), q the stored unsigned quant and s the token's 8-bit activations of scale d_x.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/compute/cpu_int8_interleaved.h"
#include "engine/gguf/ggml_types.h"

namespace servescope::compute::kquant_interleaved {

// One super-block (256 columns) of 16 rows of Q4_K. Pair c of sub-blocks (2c, 2c + 1) is 32
// bytes of a row: element l of sub-block 2c in the low nibble of byte l, of 2c + 1 in the high.
// Chunk i holds bytes 4i .. 4i + 3 of every row, so its nibbles are elements 4i .. 4i + 3 of a
// sub-block for 16 rows: one integer dot's operand (and, with exact activations, 16 rows'
// weights of four columns: cpu_exact_interleaved.h).
struct Q4KBlock {
  uint16_t d[kInterleavedRows];
  uint16_t dmin[kInterleavedRows];
  uint8_t scale[8][kInterleavedRows];  // sub-block j's 6-bit scale, row by row
  uint8_t min[8][kInterleavedRows];    // and its 6-bit minimum
  uint8_t qs[4][8][kInterleavedRows][4];
};
static_assert(sizeof(Q4KBlock) == 2368, "16 rows of a Q4_K super-block, scales a byte each");

// One super-block of 16 rows of Q6_K, per activation block a (32 columns): the quants' low four
// bits as Q4_0 packs them (chunk k: element 4k + e in the low nibble of byte e, 16 + 4k + e in
// the high), and their top two bits four groups to a byte (chunk h: bits 2u, 2u + 1 of byte e
// belong to element 4 (4h + u) + e).
struct Q6KBlock {
  uint16_t d[kInterleavedRows];
  int8_t scale[16][kInterleavedRows];  // sub-block k's (16 columns) scale, row by row
  uint8_t low[8][4][kInterleavedRows][4];
  uint8_t high[8][2][kInterleavedRows][4];
};
static_assert(sizeof(Q6KBlock) == 16 * sizeof(gguf::BlockQ6_K), "Q6_K's own bytes, regrouped");

// Q4_K and Q6_K.
bool handles(gguf::GgmlType type);

// As interleave_rows, interleaved_row, interleaved_block_offset and interleaved_kernel_variants
// (cpu_int8_interleaved.h) for a type `handles` takes; rows are whole super-blocks of 256.
std::vector<uint8_t> interleave(gguf::GgmlType type, const uint8_t* data, int64_t rows,
                                int64_t cols);
void row(gguf::GgmlType type, const uint8_t* packed, int64_t cols, int64_t row, float* dst);
int32_t block_offset(gguf::GgmlType type, const ActivationBlock& x);
std::vector<InterleavedKernel> variants(gguf::GgmlType type);

}  // namespace servescope::compute::kquant_interleaved
