#include "engine/compute/cpu_exact_interleaved.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "engine/compute/cpu_features.h"
#include "engine/compute/cpu_int8_interleaved.h"
#include "engine/compute/cpu_kquant_interleaved.h"
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
using gguf::kSuperBlock;

constexpr int kChains = 4;     // one per byte of a 4-byte chunk
constexpr int kMaxTokens = 4;  // tokens a kernel call carries at once (registers)

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
  static constexpr int element(int kk, int e, int h) { return 16 * h + 4 * kk + e; }
  // The stored quant (0..63) less 32.
  static int weight(const Block& block, int a, int kk, int row, int e, int h) {
    const uint8_t low = block.low[a][kk][row][e];
    const uint8_t high = block.high[a][h][row][e];
    return (((h == 0 ? low : low >> 4) & 0x0F) | (((high >> (2 * kk)) & 3) << 4)) - 32;
  }
};

// 2^-power of each element of a super-block's span of 256 columns: what
// prepare_exact_activations multiplies by (Q4_0 and Q8_0 repeat every 32).
using ActivationScales = std::array<float, kSuperBlock>;
template <class Format>
ActivationScales block_activation_scales() {
  ActivationScales scales{};
  for (int col = 0; col < kSuperBlock; ++col) {
    const int e = col % kQuantBlock;
    for (int c = 0; c < Format::kChunks; ++c) {
      for (int k = 0; k < kChains; ++k) {
        for (int h = 0; h < Format::kPerByte; ++h) {
          if (Format::element(c, k, h) == e) {
            scales[static_cast<size_t>(col)] = std::ldexp(1.0f, -Format::power(k, h));
          }
        }
      }
    }
  }
  return scales;
}
ActivationScales q6k_activation_scales() {
  ActivationScales scales{};
  for (int col = 0; col < kSuperBlock; ++col) {
    const int e = col % kQuantBlock;
    scales[static_cast<size_t>(col)] = std::ldexp(1.0f, -Q6K::power(e % 4, e / 16));
  }
  return scales;
}
ActivationScales q4k_activation_scales() {
  ActivationScales scales{};
  for (int col = 0; col < kSuperBlock; ++col) {
    const int h = (col / kQuantBlock) % 2;
    scales[static_cast<size_t>(col)] = std::ldexp(1.0f, -Q4K::power(col % 4, h));
  }
  return scales;
}

template <class Format>
void exact_portable(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,
                    const float* prepared, int64_t tokens, float* out, int64_t out_stride) {
  const int64_t blocks = cols / kQuantBlock;
  const int64_t stride = exact_prepared_floats(Format::kType, cols);
  const auto* all = reinterpret_cast<const typename Format::Block*>(packed);
  for (int64_t row = first_row; row < end_row; ++row) {
    const auto* group = all + row / kInterleavedRows * blocks;
    const auto lane = static_cast<int>(row % kInterleavedRows);
    for (int64_t t = 0; t < tokens; ++t) {
      float total = 0.0f;
      for (int64_t b = 0; b < blocks; ++b) {
        const float* x = prepared + t * stride + b * kQuantBlock;
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

// The token's sums of each sub-block's 32 activations follow its `cols` scaled activations.
void q4k_exact_portable(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,
                        const float* prepared, int64_t tokens, float* out, int64_t out_stride) {
  const int64_t supers = cols / kSuperBlock;
  const int64_t stride = exact_prepared_floats(GgmlType::Q4_K, cols);
  const auto* all = reinterpret_cast<const Q4K::Block*>(packed);
  for (int64_t row = first_row; row < end_row; ++row) {
    const auto* group = all + row / kInterleavedRows * supers;
    const auto lane = static_cast<int>(row % kInterleavedRows);
    for (int64_t t = 0; t < tokens; ++t) {
      const float* sums = prepared + t * stride + cols;
      float total = 0.0f;
      for (int64_t s = 0; s < supers; ++s) {
        const Q4K::Block& block = group[s];
        const float d = gguf::fp16_to_fp32(block.d[lane]);
        const float dmin = gguf::fp16_to_fp32(block.dmin[lane]);
        for (int j = 0; j < Q4K::kSubBlocks; ++j) {
          const float* x = prepared + t * stride + s * kSuperBlock + j * kQuantBlock;
          std::array<float, kChains> chain{};
          for (int i = 0; i < Q4K::kChunks; ++i) {
            for (int k = 0; k < kChains; ++k) {
              const float w = std::ldexp(Q4K::weight(block, j, i, lane, k), Q4K::power(k, j % 2));
              chain[static_cast<size_t>(k)] =
                  std::fma(w, x[4 * i + k], chain[static_cast<size_t>(k)]);
            }
          }
          const float sum = (chain[0] + chain[1]) + (chain[2] + chain[3]);
          total = std::fma(d * static_cast<float>(block.scale[j][lane]), sum, total);
          total = std::fma(-(dmin * static_cast<float>(block.min[j][lane])),
                           sums[s * Q4K::kSubBlocks + j], total);
        }
      }
      out[t * out_stride + row] = total;
    }
  }
}

// As gguf::dequantize_row: d x scale x q - dmin x min.
void q4k_panels_portable(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t rows,
                         float* panels) {
  const int64_t supers = cols / kSuperBlock;
  const auto* all = reinterpret_cast<const Q4K::Block*>(packed);
  const PanelLayout layout = panel_layout(GgmlType::F32, rows, cols);
  for (int64_t r = 0; r < layout.panels() * kPanelRows; ++r) {
    const int64_t row = first_row + r;
    const auto* group = all + row / kInterleavedRows * supers;
    const auto lane = static_cast<int>(row % kInterleavedRows);
    const int64_t block_index = r / kPanelBlockRows;
    const int64_t width = layout.block_width(block_index);
    float* dst = panels + layout.block_offset(block_index) / sizeof(float) +
                 (r - block_index * kPanelBlockRows);
    for (int64_t s = 0; s < supers; ++s) {
      const Q4K::Block& block = group[s];
      for (int j = 0; j < Q4K::kSubBlocks; ++j) {
        const float scale =
            gguf::fp16_to_fp32(block.d[lane]) * static_cast<float>(block.scale[j][lane]);
        const float min =
            gguf::fp16_to_fp32(block.dmin[lane]) * static_cast<float>(block.min[j][lane]);
        for (int e = 0; e < kQuantBlock; ++e) {
          const int64_t col = s * kSuperBlock + j * kQuantBlock + e;
          dst[col * width] = scale * Q4K::weight(block, j, e / 4, lane, e % 4) - min;
        }
      }
    }
  }
}

void q6k_exact_portable(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,
                        const float* prepared, int64_t tokens, float* out, int64_t out_stride) {
  const int64_t supers = cols / kSuperBlock;
  const auto* all = reinterpret_cast<const Q6K::Block*>(packed);
  for (int64_t row = first_row; row < end_row; ++row) {
    const auto* group = all + row / kInterleavedRows * supers;
    const auto lane = static_cast<int>(row % kInterleavedRows);
    for (int64_t t = 0; t < tokens; ++t) {
      float total = 0.0f;
      for (int64_t s = 0; s < supers; ++s) {
        const Q6K::Block& block = group[s];
        const float d = gguf::fp16_to_fp32(block.d[lane]);
        for (int a = 0; a < Q6K::kBlocks; ++a) {
          const float* x = prepared + t * cols + s * kSuperBlock + a * kQuantBlock;
          for (int h = 0; h < 2; ++h) {
            std::array<float, kChains> chain{};
            for (int kk = 0; kk < 4; ++kk) {
              for (int e = 0; e < kChains; ++e) {
                const float w = std::ldexp(
                    static_cast<float>(Q6K::weight(block, a, kk, lane, e, h)), Q6K::power(e, h));
                chain[static_cast<size_t>(e)] =
                    std::fma(w, x[Q6K::element(kk, e, h)], chain[static_cast<size_t>(e)]);
              }
            }
            const float sum = (chain[0] + chain[1]) + (chain[2] + chain[3]);
            total = std::fma(d * static_cast<float>(block.scale[2 * a + h][lane]), sum, total);
          }
        }
      }
      out[t * out_stride + row] = total;
    }
  }
}

// As gguf::dequantize_row: d x scale x (q - 32).
void q6k_panels_portable(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t rows,
                         float* panels) {
  const int64_t supers = cols / kSuperBlock;
  const auto* all = reinterpret_cast<const Q6K::Block*>(packed);
  const PanelLayout layout = panel_layout(GgmlType::F32, rows, cols);
  for (int64_t r = 0; r < layout.panels() * kPanelRows; ++r) {
    const int64_t row = first_row + r;
    const auto* group = all + row / kInterleavedRows * supers;
    const auto lane = static_cast<int>(row % kInterleavedRows);
    const int64_t block_index = r / kPanelBlockRows;
    const int64_t width = layout.block_width(block_index);
    float* dst = panels + layout.block_offset(block_index) / sizeof(float) +
                 (r - block_index * kPanelBlockRows);
    for (int64_t s = 0; s < supers; ++s) {
      const Q6K::Block& block = group[s];
      const float d = gguf::fp16_to_fp32(block.d[lane]);
      for (int a = 0; a < Q6K::kBlocks; ++a) {
        for (int h = 0; h < 2; ++h) {
          const float scale = d * static_cast<float>(block.scale[2 * a + h][lane]);
          for (int kk = 0; kk < 4; ++kk) {
            for (int e = 0; e < 4; ++e) {
              const int64_t col = s * kSuperBlock + a * kQuantBlock + Q6K::element(kk, e, h);
              dst[col * width] = scale * static_cast<float>(Q6K::weight(block, a, kk, lane, e, h));
            }
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

// 64 bytes of 16 rows x 4 bytes, and the same shifted right (by 12 for the high nibbles of bytes
// 2 and 3, by 16 for bytes 2 and 3), so that every weight's bits sit below bit 23.
struct Chunk {
  __m512i bits;
  __m512i shifted;
};

// Nibble h of byte k of each row as 16 floats (nibble - kOffset) x 2^power: Q4_0 (kOffset 8)
// and Q4_K (0). Low nibbles go through a permute (a table look-up of 16 floats, on the FMA
// pipes), high nibbles under the exponent (integer and adder pipes): half and half kept a
// Zen 4 decode step 13-15% faster than either way alone (servescope-cpu-products-bench-like
// loops over 672 x 256 and 2048 x 256 Q4_0 matrices).
template <int kOffset>
struct Nibbles {
  using ChunkType = Chunk;
  SERVESCOPE_AVX512 static Chunk load(const void* bytes) {
    const __m512i bits = _mm512_loadu_si512(bytes);
    return {bits, _mm512_srli_epi32(bits, 12)};
  }
  template <int K, int H>
  SERVESCOPE_AVX512 static __m512 weights(const Chunk& chunk) {
    if constexpr (H == 0) {
      // The permute reads an index's low four bits: byte K's low nibble, once at the bottom.
      const __m512 table = _mm512_setr_ps(0 - kOffset, 1 - kOffset, 2 - kOffset, 3 - kOffset,
                                          4 - kOffset, 5 - kOffset, 6 - kOffset, 7 - kOffset,
                                          8 - kOffset, 9 - kOffset, 10 - kOffset, 11 - kOffset,
                                          12 - kOffset, 13 - kOffset, 14 - kOffset, 15 - kOffset);
      const __m512i index = K == 0 ? chunk.bits : _mm512_srli_epi32(chunk.bits, 8 * K);
      return _mm512_permutexvar_ps(index, table);
    } else {
      constexpr int kPower = Q4::power(K, H);
      const __m512i bits = _mm512_ternarylogic_epi32(
          K < 2 ? chunk.bits : chunk.shifted, _mm512_set1_epi32(0x0F << kPower),
          _mm512_set1_epi32(kExponentOf2To23), kMaskOrMagic);
      // 2^23 + nibble x 2^power, less 2^23 + kOffset x 2^power: exact.
      return _mm512_sub_ps(_mm512_castsi512_ps(bits),
                           _mm512_set1_ps(kTwo23 + kOffset * static_cast<float>(1 << kPower)));
    }
  }
};
struct Q4Avx512 : Nibbles<8> {
  using Format = Q4;
  SERVESCOPE_AVX512 static Chunk block_chunk(const Format::Block& block, int c) {
    return load(block.qs[c]);
  }
};
// Byte k of each row (Q8_0's signed weight) as 16 floats x 2^power.
struct Q8Avx512 {
  using Format = Q8;
  using ChunkType = Chunk;
  SERVESCOPE_AVX512 static Chunk block_chunk(const Format::Block& block, int c) {
    const __m512i bits = _mm512_loadu_si512(block.qs[c]);
    return {bits, _mm512_srli_epi32(bits, 16)};
  }
  template <int K, int H>
  SERVESCOPE_AVX512 static __m512 weights(const Chunk& chunk) {
    constexpr int kPower = Q8::power(K, H);
    // The byte with its sign bit flipped (weight + 128) under the exponent of 2^23.
    const __m512i bits = _mm512_ternarylogic_epi32(
        K < 2 ? chunk.bits : chunk.shifted, _mm512_set1_epi32(0xFF << kPower),
        _mm512_set1_epi32(kExponentOf2To23 | (0x80 << kPower)), kMaskFlipOrMagic);
    return _mm512_sub_ps(_mm512_castsi512_ps(bits),
                         _mm512_set1_ps(kTwo23 + 128.0f * static_cast<float>(1 << kPower)));
  }
};

// A 4-bit nibble at bit 8k of each byte and its top bits (already at bit 4 of their byte,
// other bits anywhere) put together under `top_mask`, and the same shifted right by 16.
SERVESCOPE_AVX512 inline Chunk with_top_bits(__m512i nibbles, __m512i moved_top, int top_mask) {
  const __m512i top = _mm512_and_si512(moved_top, _mm512_set1_epi32(top_mask));
  const __m512i bits =
      _mm512_ternarylogic_epi32(nibbles, _mm512_set1_epi32(0x0F0F0F0F), top, kMaskOrMagic);
  return {bits, _mm512_srli_epi32(bits, 16)};
}

// Q5_0: chunk c's two halves (low nibbles, high nibbles) with their fifth bits.
struct Q5Chunk {
  Chunk half[2];
};
struct Q5Avx512 {
  using Format = Q5;
  using ChunkType = Q5Chunk;
  template <int C>
  SERVESCOPE_AVX512 static Q5Chunk chunk_of(const Format::Block& block) {
    const __m512i nibbles = _mm512_loadu_si512(block.qs[C]);
    const __m512i fifth = _mm512_loadu_si512(block.qh);
    // Bit C (low half) moves left to bit 4; bit 4 + C (high half) right to bit 4.
    return {
        {with_top_bits(nibbles, _mm512_slli_epi32(fifth, 4 - C), 0x10101010),
         with_top_bits(_mm512_srli_epi32(nibbles, 4), _mm512_srli_epi32(fifth, C), 0x10101010)}};
  }
  SERVESCOPE_AVX512 static Q5Chunk block_chunk(const Format::Block& block, int c) {
    switch (c) {
      case 0:
        return chunk_of<0>(block);
      case 1:
        return chunk_of<1>(block);
      case 2:
        return chunk_of<2>(block);
      default:
        return chunk_of<3>(block);
    }
  }
  template <int K, int H>
  SERVESCOPE_AVX512 static __m512 weights(const Q5Chunk& chunk) {
    constexpr int kPower = Q5::power(K, H);
    const Chunk& half = chunk.half[H];
    const __m512i bits = _mm512_ternarylogic_epi32(
        K < 3 ? half.bits : half.shifted, _mm512_set1_epi32(0x1F << kPower),
        _mm512_set1_epi32(kExponentOf2To23), kMaskOrMagic);
    return _mm512_sub_ps(_mm512_castsi512_ps(bits),
                         _mm512_set1_ps(kTwo23 + 16.0f * static_cast<float>(1 << kPower)));
  }
};

// chain[t][K] += weights of byte K (nibble H) x token t's activation `element`.
template <class Simd, int K, int H, int T>
SERVESCOPE_AVX512 inline void multiply_add(const typename Simd::ChunkType& chunk, const float* x,
                                           int64_t stride, int element,
                                           __m512 (&chain)[T][kChains]) {
  const __m512 w = Simd::template weights<K, H>(chunk);
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
    chain[t][K] = _mm512_fmadd_ps(w, _mm512_set1_ps(x[t * stride + element]), chain[t][K]);
  }
}

template <int T>
SERVESCOPE_AVX512 inline void zero(__m512 (&chain)[T][kChains]) {
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 4
    for (int k = 0; k < kChains; ++k) chain[t][k] = _mm512_setzero_ps();
  }
}

SERVESCOPE_AVX512 inline __m512 chain_sum(const __m512 (&chain)[kChains]) {
  return _mm512_add_ps(_mm512_add_ps(chain[0], chain[1]), _mm512_add_ps(chain[2], chain[3]));
}

SERVESCOPE_AVX512 inline __m512 halves_to_floats(const uint16_t* halves) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(halves)));
}
SERVESCOPE_AVX512 inline __m512 signed_bytes_to_floats(const int8_t* bytes) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes))));
}
SERVESCOPE_AVX512 inline __m512 bytes_to_floats(const uint8_t* bytes) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes))));
}

template <int T>
SERVESCOPE_AVX512 inline void store_rows(const __m512 (&total)[T], int64_t row, int64_t end_row,
                                         float* out, int64_t out_stride) {
  const auto valid = static_cast<unsigned>(std::min(kInterleavedRows, end_row - row));
  const auto lanes = static_cast<__mmask16>((1u << valid) - 1u);
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * out_stride + row, lanes, total[t]);
}

// Q4_0 / Q8_0: groups of 16 rows in [first_row, end_row) against T tokens.
template <class Simd, int T>
SERVESCOPE_AVX512 void exact_groups_avx512(const uint8_t* packed, int64_t cols, int64_t first_row,
                                           int64_t end_row, const float* prepared, int64_t stride,
                                           float* out, int64_t out_stride) {
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
      zero(chain);
#pragma GCC unroll 8
      for (int c = 0; c < Format::kChunks; ++c) {
        const typename Simd::ChunkType chunk = Simd::block_chunk(group[b], c);
        const auto element = [c](int k, int h) { return Format::element(c, k, h); };
        multiply_add<Simd, 0, 0, T>(chunk, x, stride, element(0, 0), chain);
        if constexpr (Format::kPerByte == 2) {
          multiply_add<Simd, 0, 1, T>(chunk, x, stride, element(0, 1), chain);
        }
        multiply_add<Simd, 1, 0, T>(chunk, x, stride, element(1, 0), chain);
        if constexpr (Format::kPerByte == 2) {
          multiply_add<Simd, 1, 1, T>(chunk, x, stride, element(1, 1), chain);
        }
        multiply_add<Simd, 2, 0, T>(chunk, x, stride, element(2, 0), chain);
        if constexpr (Format::kPerByte == 2) {
          multiply_add<Simd, 2, 1, T>(chunk, x, stride, element(2, 1), chain);
        }
        multiply_add<Simd, 3, 0, T>(chunk, x, stride, element(3, 0), chain);
        if constexpr (Format::kPerByte == 2) {
          multiply_add<Simd, 3, 1, T>(chunk, x, stride, element(3, 1), chain);
        }
      }
      const __m512 d = halves_to_floats(group[b].d);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) total[t] = _mm512_fmadd_ps(d, chain_sum(chain[t]), total[t]);
    }
    store_rows(total, row, end_row, out, out_stride);
  }
}

// Q4_K: per sub-block j, its four chains, then its scale and its minimum x the token's sum.
template <int H, int T>
SERVESCOPE_AVX512 inline void q4k_sub_block(const Q4K::Block& block, int j, const float* x,
                                            int64_t stride, __m512 (&chain)[T][kChains]) {
  using Simd = Nibbles<0>;
  zero(chain);
#pragma GCC unroll 8
  for (int i = 0; i < Q4K::kChunks; ++i) {
    const Chunk chunk = Simd::load(block.qs[j / 2][i]);
    multiply_add<Simd, 0, H, T>(chunk, x, stride, 4 * i, chain);
    multiply_add<Simd, 1, H, T>(chunk, x, stride, 4 * i + 1, chain);
    multiply_add<Simd, 2, H, T>(chunk, x, stride, 4 * i + 2, chain);
    multiply_add<Simd, 3, H, T>(chunk, x, stride, 4 * i + 3, chain);
  }
}

// Sub-blocks 2c and 2c + 1 together, reading each chunk once: their low nibbles go through the
// permute, their high ones under the exponent, so the two kinds of work overlap (for up to two
// tokens: 16 registers of chains).
template <int T>
SERVESCOPE_AVX512 inline void q4k_sub_block_pair(const Q4K::Block& block, int c, const float* x,
                                                 int64_t stride, __m512 (&low)[T][kChains],
                                                 __m512 (&high)[T][kChains]) {
  using Simd = Nibbles<0>;
  zero(low);
  zero(high);
#pragma GCC unroll 8
  for (int i = 0; i < Q4K::kChunks; ++i) {
    const Chunk chunk = Simd::load(block.qs[c][i]);
    multiply_add<Simd, 0, 0, T>(chunk, x, stride, 4 * i, low);
    multiply_add<Simd, 0, 1, T>(chunk, x, stride, kQuantBlock + 4 * i, high);
    multiply_add<Simd, 1, 0, T>(chunk, x, stride, 4 * i + 1, low);
    multiply_add<Simd, 1, 1, T>(chunk, x, stride, kQuantBlock + 4 * i + 1, high);
    multiply_add<Simd, 2, 0, T>(chunk, x, stride, 4 * i + 2, low);
    multiply_add<Simd, 2, 1, T>(chunk, x, stride, kQuantBlock + 4 * i + 2, high);
    multiply_add<Simd, 3, 0, T>(chunk, x, stride, 4 * i + 3, low);
    multiply_add<Simd, 3, 1, T>(chunk, x, stride, kQuantBlock + 4 * i + 3, high);
  }
}

// total[t] += sub-block j's scale x its chains' sum, less its minimum x the token's sum.
template <int T>
SERVESCOPE_AVX512 inline void q4k_apply(const Q4K::Block& block, int j, __m512 d, __m512 dmin,
                                        const __m512 (&chain)[T][kChains], const float* sums,
                                        int64_t stride, __m512 (&total)[T]) {
  const __m512 scale = _mm512_mul_ps(d, bytes_to_floats(block.scale[j]));
  const __m512 min = _mm512_mul_ps(dmin, bytes_to_floats(block.min[j]));
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
    total[t] = _mm512_fmadd_ps(scale, chain_sum(chain[t]), total[t]);
    total[t] = _mm512_fnmadd_ps(min, _mm512_set1_ps(sums[t * stride + j]), total[t]);
  }
}

template <int T>
SERVESCOPE_AVX512 void q4k_groups_avx512(const uint8_t* packed, int64_t cols, int64_t first_row,
                                         int64_t end_row, const float* prepared, int64_t stride,
                                         float* out, int64_t out_stride) {
  const int64_t supers = cols / kSuperBlock;
  const auto* all = reinterpret_cast<const Q4K::Block*>(packed);
  for (int64_t row = first_row; row < end_row; row += kInterleavedRows) {
    const auto* group = all + row / kInterleavedRows * supers;
    __m512 total[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) total[t] = _mm512_setzero_ps();
    for (int64_t s = 0; s < supers; ++s) {
      const Q4K::Block& block = group[s];
      const __m512 d = halves_to_floats(block.d);
      const __m512 dmin = halves_to_floats(block.dmin);
      const float* sums = prepared + cols + s * Q4K::kSubBlocks;
      for (int c = 0; c < Q4K::kSubBlocks / 2; ++c) {
        const float* x = prepared + s * kSuperBlock + 2 * c * kQuantBlock;
        __m512 low[T][kChains];
        __m512 high[T][kChains];
        if constexpr (T <= 2) {
          q4k_sub_block_pair<T>(block, c, x, stride, low, high);
          q4k_apply<T>(block, 2 * c, d, dmin, low, sums, stride, total);
          q4k_apply<T>(block, 2 * c + 1, d, dmin, high, sums, stride, total);
        } else {
          q4k_sub_block<0, T>(block, 2 * c, x, stride, low);
          q4k_apply<T>(block, 2 * c, d, dmin, low, sums, stride, total);
          q4k_sub_block<1, T>(block, 2 * c + 1, x + kQuantBlock, stride, high);
          q4k_apply<T>(block, 2 * c + 1, d, dmin, high, sums, stride, total);
        }
      }
    }
    store_rows(total, row, end_row, out, out_stride);
  }
}

// Q6_K: low chunk kk's nibbles of half h and high chunk h's bits put together, six bits a byte
// at bit 8e, and the same shifted right by 16.
template <int KK, int H>
SERVESCOPE_AVX512 inline Chunk q6k_chunk(const Q6K::Block& block, int a) {
  const __m512i low = _mm512_loadu_si512(block.low[a][KK]);
  const __m512i nibbles = H == 0 ? low : _mm512_srli_epi32(low, 4);
  const __m512i high = _mm512_loadu_si512(block.high[a][H]);
  // The two bits at 2 KK moved to bit 4, just above the nibble.
  constexpr int kLeft = 4 - 2 * KK;
  return with_top_bits(
      nibbles, kLeft >= 0 ? _mm512_slli_epi32(high, kLeft) : _mm512_srli_epi32(high, -kLeft),
      0x30303030);
}

template <int E, int H>
SERVESCOPE_AVX512 inline __m512 q6k_weights(const Chunk& chunk) {
  constexpr int kPower = Q6K::power(E, H);
  const __m512i bits = _mm512_ternarylogic_epi32(E < 3 ? chunk.bits : chunk.shifted,
                                                 _mm512_set1_epi32(0x3F << kPower),
                                                 _mm512_set1_epi32(kExponentOf2To23), kMaskOrMagic);
  return _mm512_sub_ps(_mm512_castsi512_ps(bits),
                       _mm512_set1_ps(kTwo23 + 32.0f * static_cast<float>(1 << kPower)));
}

template <int KK, int E, int H, int T>
SERVESCOPE_AVX512 inline void q6k_multiply_add_byte(const Chunk& chunk, const float* x,
                                                    int64_t stride, __m512 (&chain)[T][kChains]) {
  const __m512 w = q6k_weights<E, H>(chunk);
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
    chain[t][E] =
        _mm512_fmadd_ps(w, _mm512_set1_ps(x[t * stride + Q6K::element(KK, E, H)]), chain[t][E]);
  }
}

template <int KK, int H, int T>
SERVESCOPE_AVX512 inline void q6k_multiply_add(const Q6K::Block& block, int a, const float* x,
                                               int64_t stride, __m512 (&chain)[T][kChains]) {
  const Chunk chunk = q6k_chunk<KK, H>(block, a);
  q6k_multiply_add_byte<KK, 0, H, T>(chunk, x, stride, chain);
  q6k_multiply_add_byte<KK, 1, H, T>(chunk, x, stride, chain);
  q6k_multiply_add_byte<KK, 2, H, T>(chunk, x, stride, chain);
  q6k_multiply_add_byte<KK, 3, H, T>(chunk, x, stride, chain);
}

template <int H, int T>
SERVESCOPE_AVX512 inline void q6k_half(const Q6K::Block& block, int a, const float* x,
                                       int64_t stride, __m512 (&chain)[T][kChains]) {
  zero(chain);
  q6k_multiply_add<0, H, T>(block, a, x, stride, chain);
  q6k_multiply_add<1, H, T>(block, a, x, stride, chain);
  q6k_multiply_add<2, H, T>(block, a, x, stride, chain);
  q6k_multiply_add<3, H, T>(block, a, x, stride, chain);
}

template <int T>
SERVESCOPE_AVX512 void q6k_groups_avx512(const uint8_t* packed, int64_t cols, int64_t first_row,
                                         int64_t end_row, const float* prepared, int64_t stride,
                                         float* out, int64_t out_stride) {
  const int64_t supers = cols / kSuperBlock;
  const auto* all = reinterpret_cast<const Q6K::Block*>(packed);
  for (int64_t row = first_row; row < end_row; row += kInterleavedRows) {
    const auto* group = all + row / kInterleavedRows * supers;
    __m512 total[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) total[t] = _mm512_setzero_ps();
    for (int64_t s = 0; s < supers; ++s) {
      const Q6K::Block& block = group[s];
      const __m512 d = halves_to_floats(block.d);
      for (int a = 0; a < Q6K::kBlocks; ++a) {
        const float* x = prepared + s * kSuperBlock + a * kQuantBlock;
        __m512 chain[T][kChains];
        q6k_half<0, T>(block, a, x, stride, chain);
        const __m512 first = _mm512_mul_ps(d, signed_bytes_to_floats(block.scale[2 * a]));
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t)
          total[t] = _mm512_fmadd_ps(first, chain_sum(chain[t]), total[t]);
        q6k_half<1, T>(block, a, x, stride, chain);
        const __m512 second = _mm512_mul_ps(d, signed_bytes_to_floats(block.scale[2 * a + 1]));
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t)
          total[t] = _mm512_fmadd_ps(second, chain_sum(chain[t]), total[t]);
      }
    }
    store_rows(total, row, end_row, out, out_stride);
  }
}

// Tokens four at a time, then the rest.
template <template <int> class Groups>
void in_token_groups(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,
                     const float* prepared, int64_t stride, int64_t tokens, float* out,
                     int64_t out_stride) {
  int64_t t = 0;
  for (; t + kMaxTokens <= tokens; t += kMaxTokens) {
    Groups<kMaxTokens>::run(packed, cols, first_row, end_row, prepared + t * stride, stride,
                            out + t * out_stride, out_stride);
  }
  const float* x = prepared + t * stride;
  float* o = out + t * out_stride;
  switch (tokens - t) {
    case 3:
      Groups<3>::run(packed, cols, first_row, end_row, x, stride, o, out_stride);
      break;
    case 2:
      Groups<2>::run(packed, cols, first_row, end_row, x, stride, o, out_stride);
      break;
    case 1:
      Groups<1>::run(packed, cols, first_row, end_row, x, stride, o, out_stride);
      break;
    default:
      break;
  }
}

template <class Simd>
struct BlockGroups {
  template <int T>
  struct Of {
    static void run(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,
                    const float* prepared, int64_t stride, float* out, int64_t out_stride) {
      exact_groups_avx512<Simd, T>(packed, cols, first_row, end_row, prepared, stride, out,
                                   out_stride);
    }
  };
};
template <int T>
struct Q4KGroups {
  static void run(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,
                  const float* prepared, int64_t stride, float* out, int64_t out_stride) {
    q4k_groups_avx512<T>(packed, cols, first_row, end_row, prepared, stride, out, out_stride);
  }
};

template <class Simd>
void exact_avx512(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,
                  const float* prepared, int64_t tokens, float* out, int64_t out_stride) {
  in_token_groups<BlockGroups<Simd>::template Of>(packed, cols, first_row, end_row, prepared,
                                                  exact_prepared_floats(Simd::Format::kType, cols),
                                                  tokens, out, out_stride);
}
template <int T>
struct Q6KGroups {
  static void run(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,
                  const float* prepared, int64_t stride, float* out, int64_t out_stride) {
    q6k_groups_avx512<T>(packed, cols, first_row, end_row, prepared, stride, out, out_stride);
  }
};
void q6k_exact_avx512(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,
                      const float* prepared, int64_t tokens, float* out, int64_t out_stride) {
  in_token_groups<Q6KGroups>(packed, cols, first_row, end_row, prepared, cols, tokens, out,
                             out_stride);
}
void q4k_exact_avx512(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,
                      const float* prepared, int64_t tokens, float* out, int64_t out_stride) {
  in_token_groups<Q4KGroups>(packed, cols, first_row, end_row, prepared,
                             exact_prepared_floats(GgmlType::Q4_K, cols), tokens, out, out_stride);
}

// Dequantised tiles: a weight's float x 2^power times d x 2^-power (both exact), 16 rows to a
// column of the panel.
template <class Simd, int K, int H>
SERVESCOPE_AVX512 inline void store_column(const typename Simd::ChunkType& chunk, __m512 d,
                                           int64_t col, int64_t width, float* dst) {
  constexpr int kPower = Simd::Format::power(K, H);
  const __m512 scaled_d = _mm512_mul_ps(d, _mm512_set1_ps(1.0f / static_cast<float>(1 << kPower)));
  _mm512_storeu_ps(dst + col * width, _mm512_mul_ps(Simd::template weights<K, H>(chunk), scaled_d));
}

// Where group p of a tile's rows goes in the tile's panels, and its column stride.
float* panel_of(float* panels, const PanelLayout& layout, int64_t p, int64_t& width) {
  const int64_t block_index = p * kPanelRows / kPanelBlockRows;
  width = layout.block_width(block_index);
  return panels + layout.block_offset(block_index) / sizeof(float) +
         (p * kPanelRows - block_index * kPanelBlockRows);
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
    int64_t width = 0;
    float* dst = panel_of(panels, layout, p, width);
    for (int64_t b = 0; b < blocks; ++b) {
      const __m512 d = halves_to_floats(group[b].d);
      for (int c = 0; c < Format::kChunks; ++c) {
        const typename Simd::ChunkType chunk = Simd::block_chunk(group[b], c);
        const int64_t first_col = b * kQuantBlock;
        const auto col = [&](int k, int h) { return first_col + Format::element(c, k, h); };
        store_column<Simd, 0, 0>(chunk, d, col(0, 0), width, dst);
        store_column<Simd, 1, 0>(chunk, d, col(1, 0), width, dst);
        store_column<Simd, 2, 0>(chunk, d, col(2, 0), width, dst);
        store_column<Simd, 3, 0>(chunk, d, col(3, 0), width, dst);
        if constexpr (Format::kPerByte == 2) {
          store_column<Simd, 0, 1>(chunk, d, col(0, 1), width, dst);
          store_column<Simd, 1, 1>(chunk, d, col(1, 1), width, dst);
          store_column<Simd, 2, 1>(chunk, d, col(2, 1), width, dst);
          store_column<Simd, 3, 1>(chunk, d, col(3, 1), width, dst);
        }
      }
    }
  }
}

// Q4_K tiles: scale x q - min, as gguf::dequantize_row rounds them (q x 2^power times
// scale x 2^-power is scale x q exactly).
template <int K, int H>
SERVESCOPE_AVX512 inline void store_q4k_column(const Chunk& chunk, __m512 scale, __m512 min,
                                               int64_t col, int64_t width, float* dst) {
  constexpr int kPower = Q4K::power(K, H);
  const __m512 scaled =
      _mm512_mul_ps(scale, _mm512_set1_ps(1.0f / static_cast<float>(1 << kPower)));
  const __m512 w = Nibbles<0>::template weights<K, H>(chunk);
  _mm512_storeu_ps(dst + col * width, _mm512_sub_ps(_mm512_mul_ps(w, scaled), min));
}

template <int H>
SERVESCOPE_AVX512 void q4k_sub_block_columns(const Q4K::Block& block, int j, __m512 scale,
                                             __m512 min, int64_t first_col, int64_t width,
                                             float* dst) {
  for (int i = 0; i < Q4K::kChunks; ++i) {
    const Chunk chunk = Nibbles<0>::load(block.qs[j / 2][i]);
    const int64_t col = first_col + 4 * i;
    store_q4k_column<0, H>(chunk, scale, min, col, width, dst);
    store_q4k_column<1, H>(chunk, scale, min, col + 1, width, dst);
    store_q4k_column<2, H>(chunk, scale, min, col + 2, width, dst);
    store_q4k_column<3, H>(chunk, scale, min, col + 3, width, dst);
  }
}

SERVESCOPE_AVX512 void q4k_panels_avx512(const uint8_t* packed, int64_t cols, int64_t first_row,
                                         int64_t rows, float* panels) {
  const int64_t supers = cols / kSuperBlock;
  const auto* all = reinterpret_cast<const Q4K::Block*>(packed);
  const PanelLayout layout = panel_layout(GgmlType::F32, rows, cols);
  for (int64_t p = 0; p < layout.panels(); ++p) {
    const auto* group = all + (first_row / kInterleavedRows + p) * supers;
    int64_t width = 0;
    float* dst = panel_of(panels, layout, p, width);
    for (int64_t s = 0; s < supers; ++s) {
      const Q4K::Block& block = group[s];
      const __m512 d = halves_to_floats(block.d);
      const __m512 dmin = halves_to_floats(block.dmin);
      for (int j = 0; j < Q4K::kSubBlocks; ++j) {
        const __m512 scale = _mm512_mul_ps(d, bytes_to_floats(block.scale[j]));
        const __m512 min = _mm512_mul_ps(dmin, bytes_to_floats(block.min[j]));
        const int64_t first_col = s * kSuperBlock + j * kQuantBlock;
        if (j % 2 == 0) {
          q4k_sub_block_columns<0>(block, j, scale, min, first_col, width, dst);
        } else {
          q4k_sub_block_columns<1>(block, j, scale, min, first_col, width, dst);
        }
      }
    }
  }
}

// Q6_K tiles: d x scale x (q - 32), as gguf::dequantize_row rounds it.
template <int KK, int E, int H>
SERVESCOPE_AVX512 inline void q6k_column(const Chunk& chunk, __m512 scale, int64_t first_col,
                                         int64_t width, float* dst) {
  constexpr int kPower = Q6K::power(E, H);
  const __m512 scaled =
      _mm512_mul_ps(scale, _mm512_set1_ps(1.0f / static_cast<float>(1 << kPower)));
  _mm512_storeu_ps(dst + (first_col + Q6K::element(KK, E, H)) * width,
                   _mm512_mul_ps(q6k_weights<E, H>(chunk), scaled));
}

template <int KK, int H>
SERVESCOPE_AVX512 inline void q6k_columns(const Q6K::Block& block, int a, __m512 scale,
                                          int64_t first_col, int64_t width, float* dst) {
  const Chunk chunk = q6k_chunk<KK, H>(block, a);
  q6k_column<KK, 0, H>(chunk, scale, first_col, width, dst);
  q6k_column<KK, 1, H>(chunk, scale, first_col, width, dst);
  q6k_column<KK, 2, H>(chunk, scale, first_col, width, dst);
  q6k_column<KK, 3, H>(chunk, scale, first_col, width, dst);
}

template <int H>
SERVESCOPE_AVX512 void q6k_half_columns(const Q6K::Block& block, int a, __m512 d, int64_t first_col,
                                        int64_t width, float* dst) {
  const __m512 scale = _mm512_mul_ps(d, signed_bytes_to_floats(block.scale[2 * a + H]));
  q6k_columns<0, H>(block, a, scale, first_col, width, dst);
  q6k_columns<1, H>(block, a, scale, first_col, width, dst);
  q6k_columns<2, H>(block, a, scale, first_col, width, dst);
  q6k_columns<3, H>(block, a, scale, first_col, width, dst);
}

SERVESCOPE_AVX512 void q6k_panels_avx512(const uint8_t* packed, int64_t cols, int64_t first_row,
                                         int64_t rows, float* panels) {
  const int64_t supers = cols / kSuperBlock;
  const auto* all = reinterpret_cast<const Q6K::Block*>(packed);
  const PanelLayout layout = panel_layout(GgmlType::F32, rows, cols);
  for (int64_t p = 0; p < layout.panels(); ++p) {
    const auto* group = all + (first_row / kInterleavedRows + p) * supers;
    int64_t width = 0;
    float* dst = panel_of(panels, layout, p, width);
    for (int64_t s = 0; s < supers; ++s) {
      const __m512 d = halves_to_floats(group[s].d);
      for (int a = 0; a < Q6K::kBlocks; ++a) {
        const int64_t first_col = s * kSuperBlock + a * kQuantBlock;
        q6k_half_columns<0>(group[s], a, d, first_col, width, dst);
        q6k_half_columns<1>(group[s], a, d, first_col, width, dst);
      }
    }
  }
}

#pragma GCC diagnostic pop
#endif

using PanelsFromInterleaved = void (*)(const uint8_t* packed, int64_t cols, int64_t first_row,
                                       int64_t rows, float* panels);
// A type's kernels: portable, and AVX-512 where this build has them (null otherwise).
struct TypeKernels {
  ExactInterleavedKernel portable;
  ExactInterleavedKernel avx512;
  PanelsFromInterleaved portable_panels;
  PanelsFromInterleaved avx512_panels;
};

TypeKernels kernels_for(GgmlType type) {
#ifdef SERVESCOPE_X86_SIMD
  switch (type) {
    case GgmlType::Q4_0:
      return {exact_portable<Q4>, exact_avx512<Q4Avx512>, panels_portable<Q4>,
              panels_avx512<Q4Avx512>};
    case GgmlType::Q8_0:
      return {exact_portable<Q8>, exact_avx512<Q8Avx512>, panels_portable<Q8>,
              panels_avx512<Q8Avx512>};
    case GgmlType::Q5_0:
      return {exact_portable<Q5>, exact_avx512<Q5Avx512>, panels_portable<Q5>,
              panels_avx512<Q5Avx512>};
    case GgmlType::Q4_K:
      return {q4k_exact_portable, q4k_exact_avx512, q4k_panels_portable, q4k_panels_avx512};
    default:
      return {q6k_exact_portable, q6k_exact_avx512, q6k_panels_portable, q6k_panels_avx512};
  }
#else
  switch (type) {
    case GgmlType::Q4_0:
      return {exact_portable<Q4>, nullptr, panels_portable<Q4>, nullptr};
    case GgmlType::Q8_0:
      return {exact_portable<Q8>, nullptr, panels_portable<Q8>, nullptr};
    case GgmlType::Q5_0:
      return {exact_portable<Q5>, nullptr, panels_portable<Q5>, nullptr};
    case GgmlType::Q4_K:
      return {q4k_exact_portable, nullptr, q4k_panels_portable, nullptr};
    default:
      return {q6k_exact_portable, nullptr, q6k_panels_portable, nullptr};
  }
#endif
}

// x[e] x 2^-power[e]: exact, so every instruction set's clone gives the same bits.
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target_clones("avx512f", "default")))
#endif
void scale_span(const float* x, const float* scales, int64_t n, float* out) {
  for (int64_t e = 0; e < n; ++e) out[e] = x[e] * scales[e];
}

}  // namespace

bool has_exact_interleaved_kernel(GgmlType type) {
  return (type == GgmlType::Q4_0 || type == GgmlType::Q5_0 || type == GgmlType::Q8_0 ||
          type == GgmlType::Q4_K || type == GgmlType::Q6_K) &&
         cpu_has_avx512_bw();
}

int64_t exact_prepared_floats(GgmlType type, int64_t cols) {
  return type == GgmlType::Q4_K ? cols + cols / kQuantBlock : cols;
}

void prepare_exact_activations(GgmlType type, const float* x, int64_t x_stride, int64_t tokens,
                               int64_t cols, float* prepared) {
  static const ActivationScales q4_scales = block_activation_scales<Q4>();
  static const ActivationScales q8_scales = block_activation_scales<Q8>();
  static const ActivationScales q5_scales = block_activation_scales<Q5>();
  static const ActivationScales q4k_scales = q4k_activation_scales();
  static const ActivationScales q6k_scales = q6k_activation_scales();
  const ActivationScales& scales = type == GgmlType::Q4_0   ? q4_scales
                                   : type == GgmlType::Q5_0 ? q5_scales
                                   : type == GgmlType::Q8_0 ? q8_scales
                                   : type == GgmlType::Q4_K ? q4k_scales
                                                            : q6k_scales;
  const int64_t stride = exact_prepared_floats(type, cols);
  for (int64_t t = 0; t < tokens; ++t) {
    const float* in = x + t * x_stride;
    float* to = prepared + t * stride;
    for (int64_t first = 0; first < cols; first += kSuperBlock) {
      scale_span(in + first, scales.data(), std::min<int64_t>(kSuperBlock, cols - first),
                 to + first);
    }
    if (type != GgmlType::Q4_K) continue;
    for (int64_t b = 0; b < cols / kQuantBlock; ++b) {  // the sums the minimums multiply
      float sum = 0.0f;
      for (int64_t e = 0; e < kQuantBlock; ++e) sum += in[b * kQuantBlock + e];
      to[cols + b] = sum;
    }
  }
}

std::vector<ExactInterleavedKernel> exact_interleaved_kernel_variants(GgmlType type) {
  const TypeKernels kernels = kernels_for(type);
  std::vector<ExactInterleavedKernel> variants{kernels.portable};
  if (kernels.avx512 != nullptr && cpu_has_avx512_bw()) variants.push_back(kernels.avx512);
  return variants;
}

ExactInterleavedKernel exact_interleaved_kernel(GgmlType type) {
  const TypeKernels kernels = kernels_for(type);
  static const bool avx512 = cpu_has_avx512_bw();
  return avx512 && kernels.avx512 != nullptr ? kernels.avx512 : kernels.portable;
}

void interleaved_to_panels(GgmlType type, const uint8_t* packed, int64_t cols, int64_t first_row,
                           int64_t rows, float* panels) {
  const TypeKernels kernels = kernels_for(type);
  static const bool avx512 = cpu_has_avx512_bw();
  const PanelsFromInterleaved panels_of_type =
      avx512 && kernels.avx512_panels != nullptr ? kernels.avx512_panels : kernels.portable_panels;
  panels_of_type(packed, cols, first_row, rows, panels);
}

}  // namespace servescope::compute
