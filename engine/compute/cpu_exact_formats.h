// Internal to the exact interleaved kernels (cpu_exact_interleaved.h): where each weight of a
// 16-row group sits and the power of two its conversion leaves on it (the portable kernels
// decode it from these, the AVX-512 ones in registers), and the AVX-512 kernels' entry points.
#pragma once

#include <cstdint>

#include "engine/compute/cpu_exact_interleaved.h"
#include "engine/compute/cpu_int8_interleaved.h"
#include "engine/compute/cpu_kquant_interleaved.h"
#include "engine/compute/cpu_panel_dot.h"
#include "engine/gguf/ggml_types.h"

namespace servescope::compute::exact {

using gguf::GgmlType;
using gguf::kQuantBlock;
using gguf::kSuperBlock;

constexpr int kChains = 4;  // one per byte of a 4-byte chunk

// Where each weight of a block sits and the power of two its conversion leaves on it. A chunk
// is 16 rows x 4 bytes; byte k of chunk c holds Q8_0's element 4c + k, or Q4_0's elements 4c + k
// (low nibble) and 16 + 4c + k (high nibble).
struct Q4 {
  using Block = InterleavedQ4Block;
  static constexpr GgmlType kType = GgmlType::Q4_0;
  static constexpr int kChunks = 4;
  static constexpr int kPerByte = 2;
  static constexpr int element(int c, int k, int h) { return (h == 0 ? 0 : 16) + 4 * c + k; }
  // Low nibbles (h = 0) are looked up in a table of floats: power 0. High nibble k sits at bit
  // 8k + 4 of a 32-bit lane; those of bytes 2 and 3 are read after a shift right by 12 (bit 23
  // belongs to the exponent), at bit 8k - 8.
  static constexpr int power(int k, int h) {
    if (h == 0) return 0;
    return k < 2 ? 8 * k + 4 : 8 * k - 8;
  }
  // Column col (of a span of 256) is element col % 32 of its block: byte col % 4, half col / 16.
  static constexpr int column_power(int col) { return power(col % 4, col % kQuantBlock / 16); }
  static float weight(const Block& block, int c, int row, int k, int h) {
    const uint8_t byte = block.qs[c][row][k];
    return static_cast<float>((h == 0 ? byte & 0x0F : byte >> 4) - 8);
  }
};
struct Q8 {
  using Block = InterleavedQ8Block;
  static constexpr GgmlType kType = GgmlType::Q8_0;
  static constexpr int kChunks = 8;
  static constexpr int kPerByte = 1;
  static constexpr int element(int c, int k, int /*h*/) { return 4 * c + k; }
  // Bytes 2 and 3 are read after a shift right by 16.
  static constexpr int power(int k, int /*h*/) { return 8 * (k % 2); }
  static constexpr int column_power(int col) { return power(col % 4, 0); }
  static float weight(const Block& block, int c, int row, int k, int /*h*/) {
    return static_cast<float>(block.qs[c][row][k]);
  }
};

// Q5_0: Q4_0's nibbles, and the fifth bit of element 4c + k (h = 0) or 16 + 4c + k (h = 1)
// at bit c + 4h of byte k of the row's qh. The kernels put a byte's five bits together at
// bit 8k (the high nibbles shifted down first), bytes 2 and 3 after a shift right by 16.
struct Q5 {
  using Block = InterleavedQ5Block;
  static constexpr GgmlType kType = GgmlType::Q5_0;
  static constexpr int kChunks = 4;
  static constexpr int kPerByte = 2;
  static constexpr int element(int c, int k, int h) { return Q4::element(c, k, h); }
  static constexpr int power(int k, int /*h*/) { return k < 3 ? 8 * k : 8 * k - 16; }
  static constexpr int column_power(int col) { return power(col % 4, 0); }
  static float weight(const Block& block, int c, int row, int k, int h) {
    const uint8_t byte = block.qs[c][row][k];
    const int fifth = (block.qh[row][k] >> (c + 4 * h)) & 1;
    return static_cast<float>(((h == 0 ? byte & 0x0F : byte >> 4) | (fifth << 4)) - 16);
  }
};

// Q4_K: byte k of chunk i of sub-block pair c holds element 4i + k of sub-block 2c (low
// nibble, h = 0) and of 2c + 1 (high nibble, h = 1), unsigned: Q4_0's bit positions.
struct Q4K {
  using Block = kquant_interleaved::Q4KBlock;
  static constexpr int kSubBlocks = kSuperBlock / kQuantBlock;
  static constexpr int kChunks = 8;  // per sub-block
  static constexpr int power(int k, int h) { return Q4::power(k, h); }
  // Column col is element col % 4 of a chunk of sub-block col / 32 (half: its parity).
  static constexpr int column_power(int col) { return power(col % 4, col / kQuantBlock % 2); }
  static float weight(const Block& block, int j, int i, int row, int k) {
    const uint8_t byte = block.qs[j / 2][i][row][k];
    return static_cast<float>(j % 2 == 0 ? byte & 0x0F : byte >> 4);
  }
};

// Q6_K, per activation block a of 32 columns: byte e of low chunk kk holds the low four bits
// of element 4kk + e (low nibble, half h = 0) and 16 + 4kk + e (high nibble, h = 1); byte e of
// high chunk h holds their top two bits at bit 2kk. Half h is sub-block 2a + h (16 columns).
// The kernels put the six bits of half h's byte e together at bit 8e (the high nibbles shifted
// down first), and read bytes 2 and 3 after a shift right by 16: the weight's power of two.
struct Q6K {
  using Block = kquant_interleaved::Q6KBlock;
  static constexpr int kBlocks = kSuperBlock / kQuantBlock;
  static constexpr int power(int e, int /*h*/) { return e < 3 ? 8 * e : 8 * e - 16; }
  static constexpr int column_power(int col) { return power(col % 4, 0); }
  static constexpr int element(int kk, int e, int h) { return 16 * h + 4 * kk + e; }
  // The stored quant (0..63) less 32.
  static int weight(const Block& block, int a, int kk, int row, int e, int h) {
    const uint8_t low = block.low[a][kk][row][e];
    const uint8_t high = block.high[a][h][row][e];
    return (((h == 0 ? low : low >> 4) & 0x0F) | (((high >> (2 * kk)) & 3) << 4)) - 32;
  }
};

// Row r of a tile in its F32 panels (panel_layout(F32, rows, cols)): where its column 0 is, and
// the stride from one column to the next.
inline float* panel_row_start(float* panels, const PanelLayout& layout, int64_t r, int64_t& width) {
  const int64_t block = r / kPanelBlockRows;
  width = layout.block_width(block);
  return panels + layout.block_offset(block) / sizeof(float) + (r - block * kPanelBlockRows);
}

using PanelsFromInterleaved = void (*)(const uint8_t* packed, int64_t cols, int64_t first_row,
                                       int64_t rows, float* panels);

// The AVX-512 kernel and tile dequantiser of a type (null where this build has none; callers
// also check the CPU).
struct Avx512Kernels {
  ExactInterleavedKernel kernel = nullptr;
  PanelsFromInterleaved panels = nullptr;
};
Avx512Kernels avx512_kernels(GgmlType type);

}  // namespace servescope::compute::exact
