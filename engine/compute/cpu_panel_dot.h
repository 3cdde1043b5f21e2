// F32 and F16 weights as the CPU backend keeps them: repacked once at upload into panels of 16
// rows interleaved by column, so that a product reads one vector of 16 rows' weights per column
// and multiplies it with each token's activation broadcast to all lanes. A batch of B tokens
// then costs B fused multiply-adds per weight vector read, with no horizontal sums: a decode
// step of B sequences reads each weight once, and groups of 8 tokens keep a prefill near the
// FMA units' peak (faster than OpenBLAS's sgemm on these shapes).
//
// Layout: rows go in blocks of kPanelBlockRows; block b holds rows [64 b, 64 b + width) stored
// column by column (element (r, c) at block + (c * width + r - 64 b) * element size), its width
// 64 except in the last block, where it is the remaining rows rounded up to 16 (padded with
// zeros). A block is one sequential stream of memory.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/gguf/ggml_types.h"

namespace servescope::compute {

constexpr int64_t kPanelRows = 16;       // rows one 512-bit register holds
constexpr int64_t kPanelBlockRows = 64;  // rows per block: the 4 panels a lone token takes

// Whether the CPU backend stores `type` in panels (F32 and F16).
bool stored_in_panels(gguf::GgmlType type);

struct PanelLayout {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t element_bytes = 4;
  int64_t blocks() const { return (rows + kPanelBlockRows - 1) / kPanelBlockRows; }
  int64_t panels() const { return (rows + kPanelRows - 1) / kPanelRows; }
  // Rows stored for block b (a multiple of 16).
  int64_t block_width(int64_t b) const;
  uint64_t block_offset(int64_t b) const {
    return static_cast<uint64_t>(b * kPanelBlockRows * cols * element_bytes);
  }
  uint64_t bytes() const;
};
PanelLayout panel_layout(gguf::GgmlType type, int64_t rows, int64_t cols);

// Repacks `rows` GGML rows of `type` (row-major, as in the file) into the layout.
std::vector<uint8_t> pack_panels(gguf::GgmlType type, int64_t rows, int64_t cols,
                                 const uint8_t* row_major);
// Rows [0, rows) of weights of any type (row r at first_row + r * row_bytes, as in the file),
// dequantised into the F32 panel layout panel_layout(F32, rows, cols) at `panels`, padding rows
// zero: a tile that panel_kernel_for(F32) multiplies. The values are dequantize_row_fast's.
void dequantize_to_panels(gguf::GgmlType type, const uint8_t* first_row, uint64_t row_bytes,
                          int64_t rows, int64_t cols, float* panels);
// Row r of packed weights as float32 (an embedding look-up).
void panel_row(gguf::GgmlType type, const uint8_t* panels, int64_t rows, int64_t cols, int64_t r,
               float* dst);

// Rows of panels [first_panel, end_panel) against `tokens` tokens (token t at x + t * x_stride):
// out[t * out_stride + r] for those rows r < rows. Every (row, token) sum is one chain of fused
// multiply-adds over the columns in order, starting from zero, whatever the token count, the
// panel range and the variant: a token gets the same bits alone, in any batch, on any thread
// count, and from every instruction-set variant.
using PanelKernel = void (*)(const uint8_t* panels, int64_t rows, int64_t cols, int64_t first_panel,
                             int64_t end_panel, const float* x, int64_t x_stride, int64_t tokens,
                             float* out, int64_t out_stride);
// The fastest variant of this CPU for F32 or F16.
PanelKernel panel_kernel_for(gguf::GgmlType type);
// Every variant this CPU runs (portable first, then AVX2, AVX-512 where present), for tests.
std::vector<PanelKernel> panel_kernel_variants(gguf::GgmlType type);

}  // namespace servescope::compute
