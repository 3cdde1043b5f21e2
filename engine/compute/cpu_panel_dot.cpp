#include "engine/compute/cpu_panel_dot.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <utility>

#include "engine/compute/cpu_block_dot.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "engine/compute/cpu_features.h"
#define SERVESCOPE_X86_SIMD 1
#endif

namespace servescope::compute {
namespace {

constexpr int64_t kPanelsPerBlock = kPanelBlockRows / kPanelRows;

// One micro-kernel: P consecutive panels of one block (column c of panel p at
// w + (c * ld + 16 p) elements) against T tokens; writes the first `valid` of the P x 16 rows.
using Micro = void (*)(const uint8_t* w, int64_t ld, int64_t n, const float* x, int64_t x_stride,
                       float* out, int64_t out_stride, int64_t valid, bool prefetch);

template <bool Half>
constexpr int64_t kElementBytes = Half ? 2 : 4;

template <bool Half>
float weight_value(const uint8_t* p) {
  if constexpr (Half) {
    uint16_t h;
    std::memcpy(&h, p, sizeof h);
    return gguf::fp16_to_fp32(h);
  } else {
    float v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
}

// The portable variant: the same fused multiply-add per lane (std::fma rounds once, as the
// vector instructions do), so it gives the vector variants' bits.
template <bool Half, int P, int T>
void micro_portable(const uint8_t* w, int64_t ld, int64_t n, const float* x, int64_t x_stride,
                    float* out, int64_t out_stride, int64_t valid, bool /*prefetch*/) {
  float acc[P][T][kPanelRows] = {};
  for (int64_t c = 0; c < n; ++c) {
    for (int p = 0; p < P; ++p) {
      const uint8_t* column = w + (c * ld + p * kPanelRows) * kElementBytes<Half>;
      float weights[kPanelRows];
      for (int l = 0; l < kPanelRows; ++l) {
        weights[l] = weight_value<Half>(column + l * kElementBytes<Half>);
      }
      for (int t = 0; t < T; ++t) {
        const float xt = x[t * x_stride + c];
        for (int l = 0; l < kPanelRows; ++l) acc[p][t][l] = std::fma(weights[l], xt, acc[p][t][l]);
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    for (int64_t r = 0; r < valid; ++r) out[t * out_stride + r] = acc[r / 16][t][r % 16];
  }
}

// Kernel tables: Micro for P panels and T = 1 .. G tokens.
template <int G>
using MicroRow = std::array<Micro, G>;

template <bool Half, int P, size_t... Ts>
constexpr MicroRow<sizeof...(Ts)> portable_row(std::index_sequence<Ts...>) {
  return {&micro_portable<Half, P, static_cast<int>(Ts) + 1>...};
}

#ifdef SERVESCOPE_X86_SIMD
#define SERVESCOPE_AVX2 __attribute__((target("avx2,fma,f16c")))
#define SERVESCOPE_AVX512 __attribute__((target("avx512f,avx2,fma,f16c")))
// GCC 12's own AVX-512 intrinsics (cvtph) start from _mm512_undefined values, which its
// uninitialised-use warnings flag inside the header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// A block is one sequential stream of weights, and a few tokens' chains take 4 cycles a
// column: a core's hardware prefetch alone does not keep enough reads in flight on one stream
// to read a model from main memory at the rate the FMAs could take it. (The address may lie
// past the matrix: a prefetch never faults.)
constexpr int64_t kPrefetchColumns = 64;
template <bool Half, int P>
inline void prefetch_ahead(const uint8_t* column, int64_t column_bytes) {
  const uint8_t* ahead = column + kPrefetchColumns * column_bytes;
  for (int p = 0; p < P; p += (Half ? 2 : 1)) {
    _mm_prefetch(reinterpret_cast<const char*>(ahead + p * kPanelRows * kElementBytes<Half>),
                 _MM_HINT_T0);
  }
}

template <bool Half>
SERVESCOPE_AVX512 inline __m512 load_panel16(const uint8_t* p) {
  if constexpr (Half) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  } else {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(p));
  }
}

// AVX-512: one register per panel and token.
template <bool Half, int P, int T>
SERVESCOPE_AVX512 void micro_avx512(const uint8_t* w, int64_t ld, int64_t n, const float* x,
                                    int64_t x_stride, float* out, int64_t out_stride, int64_t valid,
                                    bool prefetch) {
  __m512 acc[P][T];
  for (int p = 0; p < P; ++p) {
    for (int t = 0; t < T; ++t) acc[p][t] = _mm512_setzero_ps();
  }
  const int64_t column_bytes = ld * kElementBytes<Half>;
  for (int64_t c = 0; c < n; ++c) {
    const uint8_t* column = w + c * column_bytes;
    if (prefetch) prefetch_ahead<Half, P>(column, column_bytes);
    __m512 weights[P];
    for (int p = 0; p < P; ++p) {
      weights[p] = load_panel16<Half>(column + p * kPanelRows * kElementBytes<Half>);
      // In a register: else the compiler folds the load into every token's FMA, and the loads
      // (two per cycle), not the FMAs, set the pace.
      asm("" : "+v"(weights[p]));
    }
    for (int t = 0; t < T; ++t) {
      const __m512 xt = _mm512_set1_ps(x[t * x_stride + c]);
      for (int p = 0; p < P; ++p) acc[p][t] = _mm512_fmadd_ps(weights[p], xt, acc[p][t]);
    }
  }
  for (int p = 0; p < P; ++p) {
    const int64_t lanes = std::clamp<int64_t>(valid - p * kPanelRows, 0, kPanelRows);
    const auto mask = static_cast<__mmask16>((uint32_t{1} << lanes) - 1);
    for (int t = 0; t < T; ++t) {
      _mm512_mask_storeu_ps(out + t * out_stride + p * kPanelRows, mask, acc[p][t]);
    }
  }
}

// A lone token over two whole blocks at once (each sum exactly micro_avx512's): twice the
// chains, and two streams of weights in flight instead of one, which a batch-1 decode reading
// from the last-level cache or memory needs. The hardware prefetchers keep up with two streams
// (software prefetching here measured slower: it pushed the weights out of L1).
template <bool Half>
SERVESCOPE_AVX512 void lone_token_two_blocks_avx512(const uint8_t* w, int64_t n, const float* x,
                                                    float* out, int64_t valid) {
  constexpr int kPanels = static_cast<int>(kPanelsPerBlock);
  constexpr int64_t kColumnBytes = kPanelBlockRows * kElementBytes<Half>;
  const int64_t block_bytes = n * kColumnBytes;
  __m512 acc[2][kPanels];
  for (auto& block : acc) {
    for (auto& a : block) a = _mm512_setzero_ps();
  }
  for (int64_t c = 0; c < n; ++c) {
    const __m512 xc = _mm512_set1_ps(x[c]);
    for (int b = 0; b < 2; ++b) {
      const uint8_t* column = w + b * block_bytes + c * kColumnBytes;
      for (int p = 0; p < kPanels; ++p) {
        acc[b][p] = _mm512_fmadd_ps(
            load_panel16<Half>(column + p * kPanelRows * kElementBytes<Half>), xc, acc[b][p]);
      }
    }
  }
  for (int b = 0; b < 2; ++b) {
    for (int p = 0; p < kPanels; ++p) {
      const int64_t first = b * kPanelBlockRows + p * kPanelRows;
      const int64_t lanes = std::clamp<int64_t>(valid - first, 0, kPanelRows);
      const auto mask = static_cast<__mmask16>((uint32_t{1} << lanes) - 1);
      _mm512_mask_storeu_ps(out + first, mask, acc[b][p]);
    }
  }
}

template <bool Half>
SERVESCOPE_AVX2 inline __m256 load_panel8(const uint8_t* p) {
  if constexpr (Half) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  } else {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  }
}

// AVX2: a panel's 16 rows as two registers of 8.
template <bool Half, int P, int T>
SERVESCOPE_AVX2 void micro_avx2(const uint8_t* w, int64_t ld, int64_t n, const float* x,
                                int64_t x_stride, float* out, int64_t out_stride, int64_t valid,
                                bool prefetch) {
  constexpr int kHalves = 2 * P;
  constexpr int64_t kHalfBytes = 8 * kElementBytes<Half>;
  __m256 acc[kHalves][T];
  for (int h = 0; h < kHalves; ++h) {
    for (int t = 0; t < T; ++t) acc[h][t] = _mm256_setzero_ps();
  }
  const int64_t column_bytes = ld * kElementBytes<Half>;
  for (int64_t c = 0; c < n; ++c) {
    const uint8_t* column = w + c * column_bytes;
    if (prefetch) prefetch_ahead<Half, P>(column, column_bytes);
    __m256 weights[kHalves];
    for (int h = 0; h < kHalves; ++h) {
      weights[h] = load_panel8<Half>(column + h * kHalfBytes);
      asm("" : "+x"(weights[h]));  // in a register, as in micro_avx512
    }
    for (int t = 0; t < T; ++t) {
      const __m256 xt = _mm256_set1_ps(x[t * x_stride + c]);
      for (int h = 0; h < kHalves; ++h) acc[h][t] = _mm256_fmadd_ps(weights[h], xt, acc[h][t]);
    }
  }
  for (int h = 0; h < kHalves; ++h) {
    const int64_t lanes = std::clamp<int64_t>(valid - h * 8, 0, 8);
    for (int t = 0; t < T; ++t) {
      float* o = out + t * out_stride + h * 8;
      if (lanes == 8) {
        _mm256_storeu_ps(o, acc[h][t]);
      } else if (lanes > 0) {
        alignas(32) float sums[8];
        _mm256_store_ps(sums, acc[h][t]);
        std::copy(sums, sums + lanes, o);
      }
    }
  }
}

#pragma GCC diagnostic pop

template <bool Half, int P, size_t... Ts>
constexpr MicroRow<sizeof...(Ts)> avx512_row(std::index_sequence<Ts...>) {
  return {&micro_avx512<Half, P, static_cast<int>(Ts) + 1>...};
}
template <bool Half, int P, size_t... Ts>
constexpr MicroRow<sizeof...(Ts)> avx2_row(std::index_sequence<Ts...>) {
  return {&micro_avx2<Half, P, static_cast<int>(Ts) + 1>...};
}

#endif

// A lone token over two whole blocks (w: the first; out: its first row; valid rows of 128).
using LoneTokenTwoBlocks = void (*)(const uint8_t* w, int64_t n, const float* x, float* out,
                                    int64_t valid);

// A variant: micro-kernels for groups of up to G tokens, over `wide` panels at once (chosen by
// the group's size: fewer tokens, more panels, so that enough independent sums hide the FMA
// latency) and over one panel (a block's last panels); where it has one, a lone token's kernel
// over two blocks.

template <int G>
struct Variant {
  // wide_panels[T - 1]: how many panels a group of T tokens takes at once (1, 2 or 4).
  std::array<int, G> wide_panels;
  std::array<MicroRow<G>, 3> micro;  // by panels: 1, 2, 4
  LoneTokenTwoBlocks two_blocks = nullptr;
};

template <int G>
Micro micro_for(const Variant<G>& v, int64_t panels, int64_t tokens) {
  const int index = panels == 4 ? 2 : static_cast<int>(panels) - 1;
  return v.micro[static_cast<size_t>(index)][static_cast<size_t>(tokens - 1)];
}

template <int G>
void panel_product(const Variant<G>& v, int64_t element_bytes, const uint8_t* panels, int64_t rows,
                   int64_t cols, int64_t first_panel, int64_t end_panel, const float* x,
                   int64_t x_stride, int64_t tokens, float* out, int64_t out_stride) {
  if (tokens <= 0) return;
  const PanelLayout layout{rows, cols, element_bytes};
  // Groups of nearly equal size (17 tokens: 6, 6, 5), so that no lone token is left over for a
  // latency-bound chain of its own.
  const int64_t groups = (tokens + G - 1) / G;
  const int64_t largest = (tokens + groups - 1) / groups;
  const int64_t wide = v.wide_panels[static_cast<size_t>(largest - 1)];
  for (int64_t p = first_panel; p < end_panel;) {
    const int64_t block = p / kPanelsPerBlock;
    if (tokens == 1 && v.two_blocks != nullptr && p % kPanelsPerBlock == 0 &&
        p + 2 * kPanelsPerBlock <= end_panel && layout.block_width(block + 1) == kPanelBlockRows) {
      const int64_t row0 = p * kPanelRows;
      v.two_blocks(panels + layout.block_offset(block), cols, x, out + row0,
                   std::min(2 * kPanelBlockRows, rows - row0));
      p += 2 * kPanelsPerBlock;
      continue;
    }
    const int64_t width = layout.block_width(block);
    const int64_t block_end = std::min(end_panel, block * kPanelsPerBlock + width / kPanelRows);
    const uint8_t* base = panels + layout.block_offset(block);
    while (p < block_end) {
      const int64_t step = p + wide <= block_end ? wide : 1;
      const int64_t row0 = p * kPanelRows;
      const uint8_t* w = base + (row0 - block * kPanelBlockRows) * element_bytes;
      const int64_t valid = std::min(step * kPanelRows, rows - row0);
      // The panels' weights stay in L1 while every group of tokens streams past.
      for (int64_t g = 0, t = 0; g < groups; ++g) {
        const int64_t group = tokens / groups + (g < tokens % groups ? 1 : 0);
        // Only the first group reads the panels from memory; the others find them in cache.
        micro_for(v, step, group)(w, width, cols, x + t * x_stride, x_stride,
                                  out + t * out_stride + row0, out_stride, valid, g == 0);
        t += group;
      }
      p += step;
    }
  }
}

constexpr int kPortableGroup = 4;
template <bool Half>
const Variant<kPortableGroup> kPortable{
    {1, 1, 1, 1},
    {portable_row<Half, 1>(std::make_index_sequence<kPortableGroup>()),
     portable_row<Half, 2>(std::make_index_sequence<kPortableGroup>()),
     portable_row<Half, 4>(std::make_index_sequence<kPortableGroup>())}};

template <bool Half>
void panel_product_portable(const uint8_t* panels, int64_t rows, int64_t cols, int64_t first_panel,
                            int64_t end_panel, const float* x, int64_t x_stride, int64_t tokens,
                            float* out, int64_t out_stride) {
  panel_product(kPortable<Half>, kElementBytes<Half>, panels, rows, cols, first_panel, end_panel, x,
                x_stride, tokens, out, out_stride);
}

#ifdef SERVESCOPE_X86_SIMD
// AVX-512 (32 registers): 1-4 tokens over 4 panels (4-16 sums), 5-8 over 2 (10-16 sums).
constexpr int kAvx512Group = 8;
template <bool Half>
const Variant<kAvx512Group> kAvx512{{4, 4, 4, 4, 2, 2, 2, 2},
                                    {avx512_row<Half, 1>(std::make_index_sequence<kAvx512Group>()),
                                     avx512_row<Half, 2>(std::make_index_sequence<kAvx512Group>()),
                                     avx512_row<Half, 4>(std::make_index_sequence<kAvx512Group>())},
                                    lone_token_two_blocks_avx512<Half>};

// AVX2 (16 registers, a panel is two): 1 token over 4 panels (8 sums), 2 over 2, 3-4 over 1.
constexpr int kAvx2Group = 4;
template <bool Half>
const Variant<kAvx2Group> kAvx2{{4, 2, 1, 1},
                                {avx2_row<Half, 1>(std::make_index_sequence<kAvx2Group>()),
                                 avx2_row<Half, 2>(std::make_index_sequence<kAvx2Group>()),
                                 avx2_row<Half, 4>(std::make_index_sequence<kAvx2Group>())}};

template <bool Half>
void panel_product_avx512(const uint8_t* panels, int64_t rows, int64_t cols, int64_t first_panel,
                          int64_t end_panel, const float* x, int64_t x_stride, int64_t tokens,
                          float* out, int64_t out_stride) {
  panel_product(kAvx512<Half>, kElementBytes<Half>, panels, rows, cols, first_panel, end_panel, x,
                x_stride, tokens, out, out_stride);
}

template <bool Half>
void panel_product_avx2(const uint8_t* panels, int64_t rows, int64_t cols, int64_t first_panel,
                        int64_t end_panel, const float* x, int64_t x_stride, int64_t tokens,
                        float* out, int64_t out_stride) {
  panel_product(kAvx2<Half>, kElementBytes<Half>, panels, rows, cols, first_panel, end_panel, x,
                x_stride, tokens, out, out_stride);
}
#endif

// 16 rows of n floats (row i at src + i * src_stride) into columns: column c's 16 values at
// dst + c * dst_stride.
using RowsToColumns = void (*)(const float* src, int64_t src_stride, int64_t n, float* dst,
                               int64_t dst_stride);

void rows_to_columns_portable(const float* src, int64_t src_stride, int64_t n, float* dst,
                              int64_t dst_stride) {
  for (int64_t c = 0; c < n; ++c) {
    for (int64_t r = 0; r < kPanelRows; ++r) dst[c * dst_stride + r] = src[r * src_stride + c];
  }
}

#ifdef SERVESCOPE_X86_SIMD
#pragma GCC diagnostic push  // as around the kernels above
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// 16 x 16 floats at a time, transposed in registers: 64 shuffles instead of 256 scalar moves.
SERVESCOPE_AVX512 void rows_to_columns_avx512(const float* src, int64_t src_stride, int64_t n,
                                              float* dst, int64_t dst_stride) {
  int64_t c = 0;
  for (; c + kPanelRows <= n; c += kPanelRows) {
    __m512 row[16];
    for (int i = 0; i < 16; ++i) row[i] = _mm512_loadu_ps(src + i * src_stride + c);
    // Pairs of rows interleaved: t[2i] holds, per 128-bit lane L, columns 4L and 4L + 1 of rows
    // 2i and 2i + 1; t[2i + 1] columns 4L + 2 and 4L + 3.
    __m512 t[16];
    for (int i = 0; i < 8; ++i) {
      t[2 * i] = _mm512_unpacklo_ps(row[2 * i], row[2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_ps(row[2 * i], row[2 * i + 1]);
    }
    // u[4q + m], lane L: column 4L + m of rows 4q .. 4q + 3.
    __m512 u[16];
    for (int q = 0; q < 4; ++q) {
      u[4 * q] = _mm512_shuffle_ps(t[4 * q], t[4 * q + 2], 0x44);
      u[4 * q + 1] = _mm512_shuffle_ps(t[4 * q], t[4 * q + 2], 0xEE);
      u[4 * q + 2] = _mm512_shuffle_ps(t[4 * q + 1], t[4 * q + 3], 0x44);
      u[4 * q + 3] = _mm512_shuffle_ps(t[4 * q + 1], t[4 * q + 3], 0xEE);
    }
    // Column 4L + m gathers lane L of u[m], u[4 + m], u[8 + m], u[12 + m]: a 4 x 4 transpose
    // of 128-bit lanes.
    for (int m = 0; m < 4; ++m) {
      const __m512 low01 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x44);
      const __m512 high01 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xEE);
      const __m512 low23 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x44);
      const __m512 high23 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xEE);
      _mm512_storeu_ps(dst + (c + m) * dst_stride, _mm512_shuffle_f32x4(low01, low23, 0x88));
      _mm512_storeu_ps(dst + (c + 4 + m) * dst_stride, _mm512_shuffle_f32x4(low01, low23, 0xDD));
      _mm512_storeu_ps(dst + (c + 8 + m) * dst_stride, _mm512_shuffle_f32x4(high01, high23, 0x88));
      _mm512_storeu_ps(dst + (c + 12 + m) * dst_stride, _mm512_shuffle_f32x4(high01, high23, 0xDD));
    }
  }
  rows_to_columns_portable(src + c, src_stride, n - c, dst + c * dst_stride, dst_stride);
}
#pragma GCC diagnostic pop
#endif

RowsToColumns rows_to_columns_for_cpu() {
#ifdef SERVESCOPE_X86_SIMD
  if (cpu_has_avx512()) return rows_to_columns_avx512;
#endif
  return rows_to_columns_portable;
}

template <bool Half>
std::vector<PanelKernel> variants() {
  std::vector<PanelKernel> all{panel_product_portable<Half>};
#ifdef SERVESCOPE_X86_SIMD
  if (cpu_has_avx2()) all.push_back(panel_product_avx2<Half>);
  if (cpu_has_avx512()) all.push_back(panel_product_avx512<Half>);
#endif
  return all;
}

// Each block's rows into columns, 16 columns at a time (the block's writes for them stay in
// L1): loading a model repacks every F16 weight once (F32 ones go through
// dequantize_to_panels, whose transpose is vectorised).
template <class Element>
void transpose_blocks(const PanelLayout& layout, const uint8_t* row_major, uint8_t* packed) {
  constexpr int64_t kColumns = 16;
  const auto* src = reinterpret_cast<const Element*>(row_major);
  for (int64_t b = 0; b < layout.blocks(); ++b) {
    const int64_t width = layout.block_width(b);
    const int64_t r0 = b * kPanelBlockRows;
    const int64_t rows = std::min(kPanelBlockRows, layout.rows - r0);
    auto* dst = reinterpret_cast<Element*>(packed + layout.block_offset(b));
    for (int64_t c0 = 0; c0 < layout.cols; c0 += kColumns) {
      const int64_t c1 = std::min(layout.cols, c0 + kColumns);
      for (int64_t r = 0; r < rows; ++r) {
        const Element* row = src + (r0 + r) * layout.cols;
        for (int64_t c = c0; c < c1; ++c) dst[c * width + r] = row[c];
      }
    }
  }
}

}  // namespace

bool stored_in_panels(gguf::GgmlType type) {
  return type == gguf::GgmlType::F32 || type == gguf::GgmlType::F16;
}

int64_t PanelLayout::block_width(int64_t b) const {
  const int64_t left = rows - b * kPanelBlockRows;
  return std::min(kPanelBlockRows, (left + kPanelRows - 1) / kPanelRows * kPanelRows);
}

uint64_t PanelLayout::bytes() const {
  return blocks() == 0
             ? 0
             : block_offset(blocks() - 1) +
                   static_cast<uint64_t>(block_width(blocks() - 1) * cols * element_bytes);
}

PanelLayout panel_layout(gguf::GgmlType type, int64_t rows, int64_t cols) {
  return PanelLayout{rows, cols, type == gguf::GgmlType::F16 ? 2 : 4};
}

std::vector<uint8_t> pack_panels(gguf::GgmlType type, int64_t rows, int64_t cols,
                                 const uint8_t* row_major) {
  const PanelLayout layout = panel_layout(type, rows, cols);
  std::vector<uint8_t> packed(layout.bytes(), 0);
  if (type == gguf::GgmlType::F16) {
    transpose_blocks<uint16_t>(layout, row_major, packed.data());
  } else {
    dequantize_to_panels(type, row_major, gguf::row_bytes(type, cols), rows, cols,
                         reinterpret_cast<float*>(packed.data()));
  }
  return packed;
}

void dequantize_to_panels(gguf::GgmlType type, const uint8_t* first_row, uint64_t row_bytes,
                          int64_t rows, int64_t cols, float* panels) {
  // Columns per pass: a multiple of every block's size (K-quants: 256), and 16 rows of them
  // (16 KiB) stay in L1 between being dequantised and being turned into columns.
  constexpr int64_t kChunkColumns = 256;
  alignas(64) float chunk[kPanelRows * kChunkColumns];
  static const RowsToColumns to_columns = rows_to_columns_for_cpu();
  const PanelLayout layout = panel_layout(gguf::GgmlType::F32, rows, cols);
  for (int64_t p = 0; p < layout.panels(); ++p) {
    const int64_t block = p / kPanelsPerBlock;
    const int64_t width = layout.block_width(block);
    float* panel =
        panels + layout.block_offset(block) / sizeof(float) + (p % kPanelsPerBlock) * kPanelRows;
    const int64_t first = p * kPanelRows;
    const int64_t valid = std::min(kPanelRows, rows - first);
    for (int64_t c0 = 0; c0 < cols; c0 += kChunkColumns) {
      const int64_t n = std::min(kChunkColumns, cols - c0);
      for (int64_t r = 0; r < kPanelRows; ++r) {
        float* dst = chunk + r * kChunkColumns;
        if (r < valid) {
          dequantize_row_fast(
              type,
              first_row + static_cast<uint64_t>(first + r) * row_bytes + gguf::row_bytes(type, c0),
              dst, n);
        } else {
          std::fill(dst, dst + n, 0.0f);
        }
      }
      to_columns(chunk, kChunkColumns, n, panel + c0 * width, width);
    }
  }
}

void panel_row(gguf::GgmlType type, const uint8_t* panels, int64_t rows, int64_t cols, int64_t r,
               float* dst) {
  const PanelLayout layout = panel_layout(type, rows, cols);
  const int64_t block = r / kPanelBlockRows;
  const int64_t width = layout.block_width(block);
  const uint8_t* src = panels + layout.block_offset(block) +
                       static_cast<uint64_t>((r - block * kPanelBlockRows) * layout.element_bytes);
  const uint64_t stride = static_cast<uint64_t>(width * layout.element_bytes);
  for (int64_t c = 0; c < cols; ++c) {
    dst[c] = type == gguf::GgmlType::F16 ? weight_value<true>(src + c * stride)
                                         : weight_value<false>(src + c * stride);
  }
}

PanelKernel panel_kernel_for(gguf::GgmlType type) {
  static const PanelKernel f32 = variants<false>().back();
  static const PanelKernel f16 = variants<true>().back();
  return type == gguf::GgmlType::F16 ? f16 : f32;
}

std::vector<PanelKernel> panel_kernel_variants(gguf::GgmlType type) {
  return type == gguf::GgmlType::F16 ? variants<true>() : variants<false>();
}

}  // namespace servescope::compute
