#include "engine/compute/cpu_exact_interleaved.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "engine/compute/cpu_features.h"
#include "engine/compute/cpu_int8_interleaved.h"
#include "engine/compute/cpu_panel_dot.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SERVESCOPE_X86_SIMD 1
#define SERVESCOPE_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw")))
#endif

namespace servescope::compute {
namespace {

using gguf::GgmlType;
using gguf::kQuantBlock;

constexpr int kChains = 4;     // one per byte of a 4-byte chunk
constexpr int kMaxTokens = 4;  // tokens a kernel call carries at once (registers)

// Where each weight of a block sits and the power of two its conversion leaves on it. A chunk
// is 16 rows x 4 bytes; byte k of chunk c holds Q8_0's element 4c + k, or Q4_0's elements 4c + k
// (low nibble) and 16 + 4c + k (high nibble).
struct Q4 {
  using Block = InterleavedQ4Block;
  static constexpr int kChunks = 4;
  static constexpr int kPerByte = 2;
  static constexpr int element(int c, int k, int h) { return (h == 0 ? 0 : 16) + 4 * c + k; }
  // Nibble p = 2k + h of a 32-bit lane sits at bit 4p; nibbles 5-7 are read after a shift
  // right by 12 (bit 23 belongs to the exponent), at bit 4p - 12.
  static constexpr int power(int k, int h) {
    const int p = 2 * k + h;
    return 4 * (p < 5 ? p : p - 3);
  }
  static float weight(const Block& block, int c, int row, int k, int h) {
    const uint8_t byte = block.qs[c][row][k];
    return static_cast<float>((h == 0 ? byte & 0x0F : byte >> 4) - 8);
  }
};
struct Q8 {
  using Block = InterleavedQ8Block;
  static constexpr int kChunks = 8;
  static constexpr int kPerByte = 1;
  static constexpr int element(int c, int k, int /*h*/) { return 4 * c + k; }
  // Bytes 2 and 3 are read after a shift right by 16.
  static constexpr int power(int k, int /*h*/) { return 8 * (k % 2); }
  static float weight(const Block& block, int c, int row, int k, int /*h*/) {
    return static_cast<float>(block.qs[c][row][k]);
  }
};

// 2^-power of each element of a block: what prepare_exact_activations multiplies by.
template <class Format>
std::array<float, kQuantBlock> activation_scales() {
  std::array<float, kQuantBlock> scales{};
  for (int c = 0; c < Format::kChunks; ++c) {
    for (int k = 0; k < kChains; ++k) {
      for (int h = 0; h < Format::kPerByte; ++h) {
        scales[static_cast<size_t>(Format::element(c, k, h))] =
            std::ldexp(1.0f, -Format::power(k, h));
      }
    }
  }
  return scales;
}

template <class Format>
void exact_portable(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,
                    const float* prepared, int64_t tokens, float* out, int64_t out_stride) {
  const int64_t blocks = cols / kQuantBlock;
  const auto* all = reinterpret_cast<const typename Format::Block*>(packed);
  for (int64_t row = first_row; row < end_row; ++row) {
    const auto* group = all + row / kInterleavedRows * blocks;
    const auto lane = static_cast<int>(row % kInterleavedRows);
    for (int64_t t = 0; t < tokens; ++t) {
      float total = 0.0f;
      for (int64_t b = 0; b < blocks; ++b) {
        const float* x = prepared + t * cols + b * kQuantBlock;
        std::array<float, kChains> chain{};
        for (int c = 0; c < Format::kChunks; ++c) {
          for (int k = 0; k < kChains; ++k) {
            for (int h = 0; h < Format::kPerByte; ++h) {
              const float w =
                  std::ldexp(Format::weight(group[b], c, lane, k, h), Format::power(k, h));
              chain[static_cast<size_t>(k)] =
                  std::fma(w, x[Format::element(c, k, h)], chain[static_cast<size_t>(k)]);
            }
          }
        }
        const float sum = (chain[0] + chain[1]) + (chain[2] + chain[3]);
        total = std::fma(gguf::fp16_to_fp32(group[b].d[lane]), sum, total);
      }
      out[t * out_stride + row] = total;
    }
  }
}

template <class Format>
void panels_portable(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t rows,
                     float* panels) {
  const int64_t blocks = cols / kQuantBlock;
  const auto* all = reinterpret_cast<const typename Format::Block*>(packed);
  const PanelLayout layout = panel_layout(GgmlType::F32, rows, cols);
  for (int64_t r = 0; r < layout.panels() * kPanelRows; ++r) {
    const int64_t row = first_row + r;
    const auto* group = all + row / kInterleavedRows * blocks;
    const auto lane = static_cast<int>(row % kInterleavedRows);
    const int64_t block_index = r / kPanelBlockRows;
    const int64_t width = layout.block_width(block_index);
    float* dst = panels + layout.block_offset(block_index) / sizeof(float) +
                 (r - block_index * kPanelBlockRows);
    for (int64_t b = 0; b < blocks; ++b) {
      const float d = gguf::fp16_to_fp32(group[b].d[lane]);
      for (int c = 0; c < Format::kChunks; ++c) {
        for (int k = 0; k < kChains; ++k) {
          for (int h = 0; h < Format::kPerByte; ++h) {
            const int64_t col = b * kQuantBlock + Format::element(c, k, h);
            dst[col * width] = Format::weight(group[b], c, lane, k, h) * d;
          }
        }
      }
    }
  }
}

#ifdef SERVESCOPE_X86_SIMD
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

constexpr float kTwo23 = 8388608.0f;  // 2^23: its float has the weight's bits as mantissa
constexpr int kExponentOf2To23 = 0x4B000000;
constexpr int kMaskOrMagic = 0xEA;      // ternary logic: (a & b) | c
constexpr int kMaskFlipOrMagic = 0x6A;  // ternary logic: b ? a ^ c : c

// The 16 rows' weights of byte k (and nibble h) of a chunk as floats, times 2^power(k, h).
struct Q4Avx512 {
  using Format = Q4;
  struct Chunk {
    __m512i bits;
    __m512i shifted;  // >> 12: nibbles 5-7 at bits 8-19
  };
  SERVESCOPE_AVX512 static Chunk load(const Format::Block& block, int c) {
    const __m512i bits = _mm512_loadu_si512(block.qs[c]);
    return {bits, _mm512_srli_epi32(bits, 12)};
  }
  template <int K, int H>
  SERVESCOPE_AVX512 static __m512 weights(const Chunk& chunk) {
    constexpr int kNibble = 2 * K + H;
    constexpr int kPower = kNibble < 5 ? 4 * kNibble : 4 * (kNibble - 3);
    const __m512i source = kNibble < 5 ? chunk.bits : chunk.shifted;
    const __m512i bits =
        _mm512_ternarylogic_epi32(source, _mm512_set1_epi32(0x0F << kPower),
                                  _mm512_set1_epi32(kExponentOf2To23), kMaskOrMagic);
    // 2^23 + (weight + 8) 2^power, less 2^23 + 8 x 2^power: exact.
    return _mm512_sub_ps(_mm512_castsi512_ps(bits),
                         _mm512_set1_ps(kTwo23 + 8.0f * static_cast<float>(1 << kPower)));
  }
};
struct Q8Avx512 {
  using Format = Q8;
  struct Chunk {
    __m512i bits;
    __m512i shifted;  // >> 16: bytes 2 and 3 at bits 0-15
  };
  SERVESCOPE_AVX512 static Chunk load(const Format::Block& block, int c) {
    const __m512i bits = _mm512_loadu_si512(block.qs[c]);
    return {bits, _mm512_srli_epi32(bits, 16)};
  }
  template <int K, int H>
  SERVESCOPE_AVX512 static __m512 weights(const Chunk& chunk) {
    constexpr int kPower = 8 * (K % 2);
    const __m512i source = K < 2 ? chunk.bits : chunk.shifted;
    // The byte with its sign bit flipped (weight + 128) under the exponent of 2^23.
    const __m512i bits = _mm512_ternarylogic_epi32(
        source, _mm512_set1_epi32(0xFF << kPower),
        _mm512_set1_epi32(kExponentOf2To23 | (0x80 << kPower)), kMaskFlipOrMagic);
    return _mm512_sub_ps(_mm512_castsi512_ps(bits),
                         _mm512_set1_ps(kTwo23 + 128.0f * static_cast<float>(1 << kPower)));
  }
};

template <class Simd, int K, int H, int T>
SERVESCOPE_AVX512 inline void multiply_add(const typename Simd::Chunk& chunk, const float* x,
                                           int64_t cols, int c, __m512 (&chain)[T][kChains]) {
  const __m512 w = Simd::template weights<K, H>(chunk);
  const int element = Simd::Format::element(c, K, H);
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
    chain[t][K] = _mm512_fmadd_ps(w, _mm512_set1_ps(x[t * cols + element]), chain[t][K]);
  }
}

// Groups of 16 rows [first_group, end_group) against T tokens.
template <class Simd, int T>
SERVESCOPE_AVX512 void exact_groups_avx512(const uint8_t* packed, int64_t cols, int64_t first_row,
                                           int64_t end_row, const float* prepared, float* out,
                                           int64_t out_stride) {
  using Format = typename Simd::Format;
  const int64_t blocks = cols / kQuantBlock;
  const auto* all = reinterpret_cast<const typename Format::Block*>(packed);
  for (int64_t row = first_row; row < end_row; row += kInterleavedRows) {
    const auto* group = all + row / kInterleavedRows * blocks;
    __m512 total[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) total[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
      const float* x = prepared + b * kQuantBlock;
      __m512 chain[T][kChains];
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
#pragma GCC unroll 4
        for (int k = 0; k < kChains; ++k) chain[t][k] = _mm512_setzero_ps();
      }
#pragma GCC unroll 8
      for (int c = 0; c < Format::kChunks; ++c) {
        const typename Simd::Chunk chunk = Simd::load(group[b], c);
        multiply_add<Simd, 0, 0, T>(chunk, x, cols, c, chain);
        if constexpr (Format::kPerByte == 2) multiply_add<Simd, 0, 1, T>(chunk, x, cols, c, chain);
        multiply_add<Simd, 1, 0, T>(chunk, x, cols, c, chain);
        if constexpr (Format::kPerByte == 2) multiply_add<Simd, 1, 1, T>(chunk, x, cols, c, chain);
        multiply_add<Simd, 2, 0, T>(chunk, x, cols, c, chain);
        if constexpr (Format::kPerByte == 2) multiply_add<Simd, 2, 1, T>(chunk, x, cols, c, chain);
        multiply_add<Simd, 3, 0, T>(chunk, x, cols, c, chain);
        if constexpr (Format::kPerByte == 2) multiply_add<Simd, 3, 1, T>(chunk, x, cols, c, chain);
      }
      const __m512 d =
          _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(group[b].d)));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m512 sum = _mm512_add_ps(_mm512_add_ps(chain[t][0], chain[t][1]),
                                         _mm512_add_ps(chain[t][2], chain[t][3]));
        total[t] = _mm512_fmadd_ps(d, sum, total[t]);
      }
    }
    const auto valid = static_cast<unsigned>(std::min(kInterleavedRows, end_row - row));
    const auto lanes = static_cast<__mmask16>((1u << valid) - 1u);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * out_stride + row, lanes, total[t]);
  }
}

template <class Simd>
void exact_avx512(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,
                  const float* prepared, int64_t tokens, float* out, int64_t out_stride) {
  int64_t t = 0;
  for (; t + kMaxTokens <= tokens; t += kMaxTokens) {
    exact_groups_avx512<Simd, kMaxTokens>(packed, cols, first_row, end_row, prepared + t * cols,
                                          out + t * out_stride, out_stride);
  }
  const float* x = prepared + t * cols;
  float* o = out + t * out_stride;
  switch (tokens - t) {
    case 3:
      exact_groups_avx512<Simd, 3>(packed, cols, first_row, end_row, x, o, out_stride);
      break;
    case 2:
      exact_groups_avx512<Simd, 2>(packed, cols, first_row, end_row, x, o, out_stride);
      break;
    case 1:
      exact_groups_avx512<Simd, 1>(packed, cols, first_row, end_row, x, o, out_stride);
      break;
    default:
      break;
  }
}

// Dequantised tiles: the weight's float (times 2^power, undone by the scale's 2^-power, both
// exact) times d, 16 rows to a column of the panel.
template <class Simd, int K, int H>
SERVESCOPE_AVX512 inline void store_column(const typename Simd::Chunk& chunk, __m512 d, int c,
                                           int64_t first_col, int64_t width, float* dst) {
  const __m512 w = Simd::template weights<K, H>(chunk);
  constexpr int kPower = Simd::Format::power(K, H);
  const __m512 scaled_d = _mm512_mul_ps(d, _mm512_set1_ps(1.0f / static_cast<float>(1 << kPower)));
  const int64_t col = first_col + Simd::Format::element(c, K, H);
  _mm512_storeu_ps(dst + col * width, _mm512_mul_ps(w, scaled_d));
}

template <class Simd>
SERVESCOPE_AVX512 void panels_avx512(const uint8_t* packed, int64_t cols, int64_t first_row,
                                     int64_t rows, float* panels) {
  using Format = typename Simd::Format;
  const int64_t blocks = cols / kQuantBlock;
  const auto* all = reinterpret_cast<const typename Format::Block*>(packed);
  const PanelLayout layout = panel_layout(GgmlType::F32, rows, cols);
  for (int64_t p = 0; p < layout.panels(); ++p) {
    const auto* group = all + (first_row / kInterleavedRows + p) * blocks;
    const int64_t block_index = p * kPanelRows / kPanelBlockRows;
    const int64_t width = layout.block_width(block_index);
    float* dst = panels + layout.block_offset(block_index) / sizeof(float) +
                 (p * kPanelRows - block_index * kPanelBlockRows);
    for (int64_t b = 0; b < blocks; ++b) {
      const __m512 d =
          _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(group[b].d)));
      for (int c = 0; c < Format::kChunks; ++c) {
        const typename Simd::Chunk chunk = Simd::load(group[b], c);
        const int64_t first_col = b * kQuantBlock;
        store_column<Simd, 0, 0>(chunk, d, c, first_col, width, dst);
        store_column<Simd, 1, 0>(chunk, d, c, first_col, width, dst);
        store_column<Simd, 2, 0>(chunk, d, c, first_col, width, dst);
        store_column<Simd, 3, 0>(chunk, d, c, first_col, width, dst);
        if constexpr (Format::kPerByte == 2) {
          store_column<Simd, 0, 1>(chunk, d, c, first_col, width, dst);
          store_column<Simd, 1, 1>(chunk, d, c, first_col, width, dst);
          store_column<Simd, 2, 1>(chunk, d, c, first_col, width, dst);
          store_column<Simd, 3, 1>(chunk, d, c, first_col, width, dst);
        }
      }
    }
  }
}

#pragma GCC diagnostic pop
#endif

}  // namespace

bool has_exact_interleaved_kernel(GgmlType type) {
  return (type == GgmlType::Q4_0 || type == GgmlType::Q8_0) && cpu_has_avx512_bw();
}

void prepare_exact_activations(GgmlType type, const float* x, int64_t x_stride, int64_t tokens,
                               int64_t cols, float* prepared) {
  static const std::array<float, kQuantBlock> q4_scales = activation_scales<Q4>();
  static const std::array<float, kQuantBlock> q8_scales = activation_scales<Q8>();
  const std::array<float, kQuantBlock>& scales = type == GgmlType::Q4_0 ? q4_scales : q8_scales;
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t col = 0; col < cols; ++col) {
      prepared[t * cols + col] =
          x[t * x_stride + col] * scales[static_cast<size_t>(col % kQuantBlock)];
    }
  }
}

std::vector<ExactInterleavedKernel> exact_interleaved_kernel_variants(GgmlType type) {
  const bool q4 = type == GgmlType::Q4_0;
  std::vector<ExactInterleavedKernel> variants{q4 ? exact_portable<Q4> : exact_portable<Q8>};
#ifdef SERVESCOPE_X86_SIMD
  if (cpu_has_avx512_bw()) variants.push_back(q4 ? exact_avx512<Q4Avx512> : exact_avx512<Q8Avx512>);
#endif
  return variants;
}

ExactInterleavedKernel exact_interleaved_kernel(GgmlType type) {
  static const ExactInterleavedKernel q4 = exact_interleaved_kernel_variants(GgmlType::Q4_0).back();
  static const ExactInterleavedKernel q8 = exact_interleaved_kernel_variants(GgmlType::Q8_0).back();
  return type == GgmlType::Q4_0 ? q4 : q8;
}

void interleaved_to_panels(GgmlType type, const uint8_t* packed, int64_t cols, int64_t first_row,
                           int64_t rows, float* panels) {
  const bool q4 = type == GgmlType::Q4_0;
#ifdef SERVESCOPE_X86_SIMD
  if (cpu_has_avx512_bw()) {
    (q4 ? panels_avx512<Q4Avx512> : panels_avx512<Q8Avx512>)(packed, cols, first_row, rows, panels);
    return;
  }
#endif
  (q4 ? panels_portable<Q4> : panels_portable<Q8>)(packed, cols, first_row, rows, panels);
}

}  // namespace servescope::compute
