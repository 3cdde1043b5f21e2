#include "engine/compute/cpu_int8_interleaved.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <numeric>

#include "engine/compute/cpu_block_dot.h"
#include "engine/compute/cpu_features.h"
#include "engine/compute/cpu_int8_broadcast.h"
#include "engine/compute/cpu_kquant_interleaved.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SERVESCOPE_X86_SIMD 1
#define SERVESCOPE_AVX2 __attribute__((target("avx2,fma,f16c")))
#define SERVESCOPE_AVX_VNNI __attribute__((target("avx2,fma,f16c,avxvnni")))
#define SERVESCOPE_AVX512_VNNI \
  __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")))
#endif

namespace servescope::compute {
namespace {

using gguf::kQuantBlock;

// GCC 12's AVX-512 intrinsics start from _mm512_undefined values, which its uninitialised-use
// warnings flag inside the header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// What differs between the two weight types: how a block's weights become the operands of the
// integer dots. w[i] always holds elements
// 4i..4i+3 of the rows, so it meets the token's activations 4i..4i+3.
struct Q4 {
  using Block = InterleavedQ4Block;
  static constexpr int64_t kStoredBytes = 18;  // fp16 scale, 16 bytes of nibbles
  static constexpr gguf::GgmlType kType = gguf::GgmlType::Q4_0;
  static constexpr int32_t kAdded = 8;  // the unsigned operand is the weight plus this

  // Sum of stored nibble x activation, from the token's offset (-8 x its sum): sum of w x q.
  static int32_t dot(const Block& block, size_t lane, const ActivationBlock& x, int32_t offset) {
    int32_t sum = offset;
    for (size_t c = 0; c < 4; ++c) {
      for (size_t k = 0; k < 4; ++k) {
        const uint8_t byte = block.qs[c][lane][k];
        sum += (byte & 0x0F) * x.qs[4 * c + k] + (byte >> 4) * x.qs[16 + 4 * c + k];
      }
    }
    return sum;
  }
#ifdef SERVESCOPE_X86_SIMD
  // The nibbles as unsigned bytes (weight + 8): the dots start from the token's offset.
  SERVESCOPE_AVX512_VNNI static void operands(const Block& block, __m512i (&w)[8]) {
    const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
    for (int c = 0; c < 4; ++c) {
      const __m512i chunk = _mm512_loadu_si512(block.qs[c]);
      w[c] = _mm512_and_si512(chunk, low_nibbles);
      w[c + 4] = _mm512_and_si512(_mm512_srli_epi16(chunk, 4), low_nibbles);
    }
  }
  // Rows 8 half .. 8 half + 7; pairs of products fit 16 bits (at most 2 x 15 x 127).
  SERVESCOPE_AVX2 static void operands_half(const Block& block, int half, __m256i (&w)[8]) {
    const __m256i low_nibbles = _mm256_set1_epi8(0x0F);
    for (int c = 0; c < 4; ++c) {
      const __m256i chunk =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qs[c][8 * half]));
      w[c] = _mm256_and_si256(chunk, low_nibbles);
      w[c + 4] = _mm256_and_si256(_mm256_srli_epi16(chunk, 4), low_nibbles);
    }
  }
  SERVESCOPE_AVX2 static __m256i dot_of_four(__m256i sum, __m256i w, __m256i q) {
    return _mm256_add_epi32(sum,
                            _mm256_madd_epi16(_mm256_maddubs_epi16(w, q), _mm256_set1_epi16(1)));
  }
  static constexpr bool kAvx2FromOffset = true;
  SERVESCOPE_AVX_VNNI static void vnni_operands_half(const Block& block, int half,
                                                     __m256i (&w)[8]) {
    operands_half(block, half, w);
  }
#endif
};

// Q5_0: Q4_0's nibbles with the fifth bit set on top (weight + 16 as an unsigned byte).
struct Q5 {
  using Block = InterleavedQ5Block;
  static constexpr int64_t kStoredBytes = 22;  // fp16 scale, 4 bytes of fifth bits, 16 of nibbles
  static constexpr gguf::GgmlType kType = gguf::GgmlType::Q5_0;
  static constexpr int32_t kAdded = 16;

  static int32_t dot(const Block& block, size_t lane, const ActivationBlock& x, int32_t offset) {
    int32_t sum = offset;
    for (size_t c = 0; c < 4; ++c) {
      for (size_t k = 0; k < 4; ++k) {
        const uint8_t byte = block.qs[c][lane][k];
        const uint8_t fifth = block.qh[lane][k];
        const int low = (byte & 0x0F) | (((fifth >> c) & 1) << 4);
        const int high = (byte >> 4) | (((fifth >> (4 + c)) & 1) << 4);
        sum += low * x.qs[4 * c + k] + high * x.qs[16 + 4 * c + k];
      }
    }
    return sum;
  }
#ifdef SERVESCOPE_X86_SIMD
  // Chunk c's low and high nibbles with their fifth bits moved to bit 4 of each byte (16-bit
  // shifts: what crosses between the bytes lands outside bit 4); the blend keeps bits 0-3 of
  // the nibbles and bit 4 of the fifth bits.
  SERVESCOPE_AVX512_VNNI static void operands(const Block& block, __m512i (&w)[8]) {
    const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
    const __m512i bit4 = _mm512_set1_epi8(0x10);
    const __m512i fifth = _mm512_loadu_si512(block.qh);
    constexpr int kPickLowFromFirst = 0xE4;  // (third ? first : second), bit by bit
    for (int c = 0; c < 4; ++c) {
      const __m512i chunk = _mm512_loadu_si512(block.qs[c]);
      const __m512i low_fifth =
          _mm512_and_si512(_mm512_sll_epi16(fifth, _mm_cvtsi32_si128(4 - c)), bit4);
      const __m512i high_fifth =
          _mm512_and_si512(_mm512_srl_epi16(fifth, _mm_cvtsi32_si128(c)), bit4);
      w[c] = _mm512_ternarylogic_epi32(chunk, low_fifth, low_nibbles, kPickLowFromFirst);
      w[c + 4] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(chunk, 4), high_fifth, low_nibbles,
                                           kPickLowFromFirst);
    }
  }
  // Rows 8 half .. 8 half + 7; pairs of products fit 16 bits (at most 2 x 31 x 127).
  SERVESCOPE_AVX2 static void operands_half(const Block& block, int half, __m256i (&w)[8]) {
    const __m256i low_nibbles = _mm256_set1_epi8(0x0F);
    const __m256i bit4 = _mm256_set1_epi8(0x10);
    const __m256i fifth = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qh[8 * half]));
    for (int c = 0; c < 4; ++c) {
      const __m256i chunk =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qs[c][8 * half]));
      const __m256i low_fifth =
          _mm256_and_si256(_mm256_sll_epi16(fifth, _mm_cvtsi32_si128(4 - c)), bit4);
      const __m256i high_fifth =
          _mm256_and_si256(_mm256_srl_epi16(fifth, _mm_cvtsi32_si128(c)), bit4);
      w[c] = _mm256_or_si256(_mm256_and_si256(chunk, low_nibbles), low_fifth);
      w[c + 4] =
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(chunk, 4), low_nibbles), high_fifth);
    }
  }
  SERVESCOPE_AVX2 static __m256i dot_of_four(__m256i sum, __m256i w, __m256i q) {
    return Q4::dot_of_four(sum, w, q);
  }
  static constexpr bool kAvx2FromOffset = true;
  SERVESCOPE_AVX_VNNI static void vnni_operands_half(const Block& block, int half,
                                                     __m256i (&w)[8]) {
    operands_half(block, half, w);
  }
#endif
};

struct Q8 {
  using Block = InterleavedQ8Block;
  static constexpr int64_t kStoredBytes = 34;  // fp16 scale, 32 signed bytes
  static constexpr gguf::GgmlType kType = gguf::GgmlType::Q8_0;
  static constexpr int32_t kAdded = 128;  // in the 512-bit kernel

  static int32_t dot(const Block& block, size_t lane, const ActivationBlock& x, int32_t) {
    int32_t sum = 0;
    for (size_t i = 0; i < 8; ++i) {
      for (size_t k = 0; k < 4; ++k) sum += block.qs[i][lane][k] * x.qs[4 * i + k];
    }
    return sum;
  }
#ifdef SERVESCOPE_X86_SIMD
  // The weights plus 128 as unsigned bytes: the dots start from -128 x the token's sum.
  SERVESCOPE_AVX512_VNNI static void operands(const Block& block, __m512i (&w)[8]) {
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int i = 0; i < 8; ++i) w[i] = _mm512_xor_si512(_mm512_loadu_si512(block.qs[i]), flip);
  }
  SERVESCOPE_AVX2 static void operands_half(const Block& block, int half, __m256i (&w)[8]) {
    for (int i = 0; i < 8; ++i) {
      w[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qs[i][8 * half]));
    }
  }
  // Weight + 128 would overflow 16-bit pair sums here, so the weight's sign moves onto the
  // activation instead (|w| <= 127: at most 2 x 127 x 127), and the sum starts from zero.
  SERVESCOPE_AVX2 static __m256i dot_of_four(__m256i sum, __m256i w, __m256i q) {
    const __m256i products = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(q, w));
    return _mm256_add_epi32(sum, _mm256_madd_epi16(products, _mm256_set1_epi16(1)));
  }
  static constexpr bool kAvx2FromOffset = false;
  // With a dpbusd instruction the weight plus 128 is the unsigned operand, as on AVX-512.
  SERVESCOPE_AVX_VNNI static void vnni_operands_half(const Block& block, int half,
                                                     __m256i (&w)[8]) {
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
    operands_half(block, half, w);
    for (int i = 0; i < 8; ++i) w[i] = _mm256_xor_si256(w[i], flip);
  }
#endif
};

// A stored GGML block (fp16 scale, then the weights' bytes) into lane `lane` of an interleaved
// one, and back: its bytes go 4 at a time into the chunks, in order (both types' layout).
template <class Block>
void regroup(const uint8_t* stored, size_t lane, Block& block) {
  std::memcpy(&block.d[lane], stored, sizeof(uint16_t));
  for (size_t c = 0; c < std::size(block.qs); ++c) {
    std::memcpy(block.qs[c][lane], stored + 2 + 4 * c, 4);
  }
}
template <class Block>
void restore(const Block& block, size_t lane, uint8_t* stored) {
  std::memcpy(stored, &block.d[lane], sizeof(uint16_t));
  for (size_t c = 0; c < std::size(block.qs); ++c) {
    std::memcpy(stored + 2 + 4 * c, block.qs[c][lane], 4);
  }
}

// Q5_0's blocks: the fifth bits regrouped as InterleavedQ5Block keeps them.
void regroup(const uint8_t* stored, size_t lane, InterleavedQ5Block& block) {
  gguf::BlockQ5_0 q5;
  std::memcpy(&q5, stored, sizeof q5);
  uint32_t fifth = 0;
  std::memcpy(&fifth, q5.qh, sizeof fifth);
  block.d[lane] = q5.d;
  for (size_t k = 0; k < 4; ++k) {
    uint8_t bits = 0;
    for (size_t c = 0; c < 4; ++c) {
      bits |= static_cast<uint8_t>(((fifth >> (4 * c + k)) & 1) << c);
      bits |= static_cast<uint8_t>(((fifth >> (16 + 4 * c + k)) & 1) << (4 + c));
    }
    block.qh[lane][k] = bits;
  }
  for (size_t c = 0; c < 4; ++c) std::memcpy(block.qs[c][lane], q5.qs + 4 * c, 4);
}
void restore(const InterleavedQ5Block& block, size_t lane, uint8_t* stored) {
  gguf::BlockQ5_0 q5{};
  q5.d = block.d[lane];
  uint32_t fifth = 0;
  for (size_t k = 0; k < 4; ++k) {
    for (size_t c = 0; c < 4; ++c) {
      fifth |= static_cast<uint32_t>((block.qh[lane][k] >> c) & 1) << (4 * c + k);
      fifth |= static_cast<uint32_t>((block.qh[lane][k] >> (4 + c)) & 1) << (16 + 4 * c + k);
    }
  }
  std::memcpy(q5.qh, &fifth, sizeof fifth);
  for (size_t c = 0; c < 4; ++c) std::memcpy(q5.qs + 4 * c, block.qs[c][lane], 4);
  std::memcpy(stored, &q5, sizeof q5);
}

template <class W>
const typename W::Block* group_blocks(const uint8_t* packed, int64_t blocks, int64_t group) {
  return reinterpret_cast<const typename W::Block*>(packed) + group * blocks;
}

template <class W>
void product_portable(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,
                      const ActivationBlock* x, const int32_t* x_offsets, int64_t tokens,
                      float* out, int64_t out_stride) {
  const int64_t blocks = cols / kQuantBlock;
  const float* half_to_float = fp16_to_float_table();
  for (int64_t r = first_row; r < end_row; ++r) {
    const typename W::Block* group = group_blocks<W>(packed, blocks, r / kInterleavedRows);
    const auto lane = static_cast<size_t>(r % kInterleavedRows);
    for (int64_t t = 0; t < tokens; ++t) {
      float sum = 0.0f;
      for (int64_t b = 0; b < blocks; ++b) {
        const ActivationBlock& xb = x[t * blocks + b];
        const int32_t dot = W::dot(group[b], lane, xb, x_offsets[t * blocks + b]);
        const float scale = half_to_float[group[b].d[lane]] * xb.d;
        sum = std::fma(scale, static_cast<float>(dot), sum);
      }
      out[t * out_stride + r] = sum;
    }
  }
}

#ifdef SERVESCOPE_X86_SIMD

// 16 rows (a whole group, or the first `valid`) against T tokens.
template <class W, int T>
SERVESCOPE_AVX512_VNNI void group_avx512(const typename W::Block* group, int64_t blocks,
                                         const ActivationBlock* x, const int32_t* x_offsets,
                                         float* out, int64_t out_stride, __mmask16 valid) {
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const typename W::Block& block = group[b];
    __m512i w[8];
    W::operands(block, w);
    const __m512 d_w =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.d)));
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const ActivationBlock& xb = x[t * blocks + b];
      // Two chains of four dots: integer sums, so splitting them changes nothing.
      __m512i even = _mm512_set1_epi32(x_offsets[t * blocks + b]);
      __m512i odd = _mm512_setzero_si512();
      for (int i = 0; i < 8; i += 2) {
        even = _mm512_dpbusd_epi32(even, w[i], activations_of_group_512(xb, i));
        odd = _mm512_dpbusd_epi32(odd, w[i + 1], activations_of_group_512(xb, i + 1));
      }
      const __m512 dot = _mm512_cvtepi32_ps(_mm512_add_epi32(even, odd));
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d_w, _mm512_set1_ps(xb.d)), dot, acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * out_stride, valid, acc[t]);
}

// Eight tokens at a time keep 8 sums and the block's 8 weight registers in 32 registers.
constexpr int kAvx512Tokens = 8;

template <class W>
using GroupKernel = void (*)(const typename W::Block*, int64_t, const ActivationBlock*,
                             const int32_t*, float*, int64_t, __mmask16);
template <class W>
constexpr GroupKernel<W> kGroupKernels[kAvx512Tokens] = {nullptr,
                                                         group_avx512<W, 1>,
                                                         group_avx512<W, 2>,
                                                         group_avx512<W, 3>,
                                                         group_avx512<W, 4>,
                                                         group_avx512<W, 5>,
                                                         group_avx512<W, 6>,
                                                         group_avx512<W, 7>};

template <class W>
SERVESCOPE_AVX512_VNNI void product_avx512(const uint8_t* packed, int64_t cols, int64_t first_row,
                                           int64_t end_row, const ActivationBlock* x,
                                           const int32_t* x_offsets, int64_t tokens, float* out,
                                           int64_t out_stride) {
  const int64_t blocks = cols / kQuantBlock;
  for (int64_t r = first_row; r < end_row; r += kInterleavedRows) {
    const typename W::Block* group = group_blocks<W>(packed, blocks, r / kInterleavedRows);
    const int64_t rows_here = std::min(kInterleavedRows, end_row - r);
    const auto valid = static_cast<__mmask16>((1u << rows_here) - 1);
    int64_t t = 0;
    for (; t + kAvx512Tokens <= tokens; t += kAvx512Tokens) {
      group_avx512<W, kAvx512Tokens>(group, blocks, x + t * blocks, x_offsets + t * blocks,
                                     out + t * out_stride + r, out_stride, valid);
    }
    if (t < tokens) {  // the last 1..7 tokens
      kGroupKernels<W>[tokens - t](group, blocks, x + t * blocks, x_offsets + t * blocks,
                                   out + t * out_stride + r, out_stride, valid);
    }
  }
}


// The 256-bit kernels' two ways to the integer dots: AVX2's 16-bit pair sums, or AVX-VNNI's
// dpbusd (the AVX-512 kernel's operands, 8 rows wide).
template <class W>
struct Avx2Dots {
  static constexpr bool kFromOffset = W::kAvx2FromOffset;
  SERVESCOPE_AVX2 static void operands(const typename W::Block& block, int half, __m256i (&w)[8]) {
    W::operands_half(block, half, w);
  }
  SERVESCOPE_AVX2 static __m256i dot(__m256i sum, __m256i w, __m256i q) {
    return W::dot_of_four(sum, w, q);
  }
};
template <class W>
struct VnniDots {
  static constexpr bool kFromOffset = true;
  SERVESCOPE_AVX_VNNI static void operands(const typename W::Block& block, int half,
                                           __m256i (&w)[8]) {
    W::vnni_operands_half(block, half, w);
  }
  SERVESCOPE_AVX_VNNI static __m256i dot(__m256i sum, __m256i w, __m256i q) {
    return _mm256_dpbusd_avx_epi32(sum, w, q);
  }
};

// A group's two halves of 8 rows in turn, against T tokens, with the given dots; compiled once
// for AVX2 and once for AVX-VNNI (a function's target cannot be a template parameter).
#define SERVESCOPE_DEFINE_HALF_GROUP(NAME, TARGET)                                                \
  template <class W, class Dots, int T>                                                           \
  TARGET void NAME(const typename W::Block* group, int64_t blocks, int half,                      \
                   const ActivationBlock* x, const int32_t* x_offsets, float* out,                \
                   int64_t out_stride, int64_t valid) {                                           \
    __m256 acc[T];                                                                                \
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();                                     \
    for (int64_t b = 0; b < blocks; ++b) {                                                        \
      const typename W::Block& block = group[b];                                                  \
      __m256i w[8];                                                                               \
      Dots::operands(block, half, w);                                                             \
      const __m256 d_w =                                                                          \
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block.d + 8 * half))); \
      for (int t = 0; t < T; ++t) {                                                               \
        const ActivationBlock& xb = x[t * blocks + b];                                            \
        __m256i even = Dots::kFromOffset ? _mm256_set1_epi32(x_offsets[t * blocks + b])           \
                                         : _mm256_setzero_si256();                                \
        __m256i odd = _mm256_setzero_si256();                                                     \
        for (int i = 0; i < 8; i += 2) {                                                          \
          even = Dots::dot(even, w[i], activations_of_group_256(xb, i));                          \
          odd = Dots::dot(odd, w[i + 1], activations_of_group_256(xb, i + 1));                    \
        }                                                                                         \
        const __m256 dot = _mm256_cvtepi32_ps(_mm256_add_epi32(even, odd));                       \
        acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d_w, _mm256_set1_ps(xb.d)), dot, acc[t]);          \
      }                                                                                           \
    }                                                                                             \
    for (int t = 0; t < T; ++t) {                                                                 \
      if (valid >= 8) {                                                                           \
        _mm256_storeu_ps(out + t * out_stride, acc[t]);                                           \
      } else {                                                                                    \
        float sums[8];                                                                            \
        _mm256_storeu_ps(sums, acc[t]);                                                           \
        std::copy(sums, sums + valid, out + t * out_stride);                                      \
      }                                                                                           \
    }                                                                                             \
  }
SERVESCOPE_DEFINE_HALF_GROUP(half_group_avx2, SERVESCOPE_AVX2)
SERVESCOPE_DEFINE_HALF_GROUP(half_group_vnni, SERVESCOPE_AVX_VNNI)

// Two tokens at a time: 8 weight registers and 2 sums, with the dots' temporaries, in 16.
constexpr int kHalfGroupTokens = 2;

#define SERVESCOPE_DEFINE_256_PRODUCT(NAME, TARGET, HALF_GROUP, DOTS)                              \
  template <class W>                                                                               \
  TARGET void NAME(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,        \
                   const ActivationBlock* x, const int32_t* x_offsets, int64_t tokens, float* out, \
                   int64_t out_stride) {                                                           \
    const int64_t blocks = cols / kQuantBlock;                                                     \
    for (int64_t r = first_row; r < end_row; r += kInterleavedRows / 2) {                          \
      const typename W::Block* group = group_blocks<W>(packed, blocks, r / kInterleavedRows);      \
      const auto half = static_cast<int>((r % kInterleavedRows) / 8);                              \
      const int64_t valid = std::min<int64_t>(8, end_row - r);                                     \
      int64_t t = 0;                                                                               \
      for (; t + kHalfGroupTokens <= tokens; t += kHalfGroupTokens) {                              \
        HALF_GROUP<W, DOTS<W>, kHalfGroupTokens>(group, blocks, half, x + t * blocks,              \
                                                 x_offsets + t * blocks, out + t * out_stride + r, \
                                                 out_stride, valid);                               \
      }                                                                                            \
      if (t < tokens) {                                                                            \
        HALF_GROUP<W, DOTS<W>, 1>(group, blocks, half, x + t * blocks, x_offsets + t * blocks,     \
                                  out + t * out_stride + r, out_stride, valid);                    \
      }                                                                                            \
    }                                                                                              \
  }
SERVESCOPE_DEFINE_256_PRODUCT(product_avx2, SERVESCOPE_AVX2, half_group_avx2, Avx2Dots)
SERVESCOPE_DEFINE_256_PRODUCT(product_vnni, SERVESCOPE_AVX_VNNI, half_group_vnni, VnniDots)

#endif

#pragma GCC diagnostic pop

template <class W>
std::vector<uint8_t> interleave(const uint8_t* data, int64_t rows, int64_t cols) {
  const int64_t blocks = cols / kQuantBlock;
  const int64_t groups = (rows + kInterleavedRows - 1) / kInterleavedRows;
  std::vector<uint8_t> packed(static_cast<size_t>(groups * blocks) * sizeof(typename W::Block), 0);
  auto* out = reinterpret_cast<typename W::Block*>(packed.data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      regroup(data + (r * blocks + b) * W::kStoredBytes, static_cast<size_t>(r % kInterleavedRows),
              out[(r / kInterleavedRows) * blocks + b]);
    }
  }
  return packed;
}

template <class W>
void row_of(const uint8_t* packed, int64_t cols, int64_t row, float* dst) {
  const int64_t blocks = cols / kQuantBlock;
  const typename W::Block* group = group_blocks<W>(packed, blocks, row / kInterleavedRows);
  uint8_t stored[W::kStoredBytes];
  for (int64_t b = 0; b < blocks; ++b) {
    restore(group[b], static_cast<size_t>(row % kInterleavedRows), stored);
    gguf::dequantize_row(W::kType, stored, dst + b * kQuantBlock, kQuantBlock);
  }
}

template <class W>
std::vector<InterleavedKernel> variants() {
  std::vector<InterleavedKernel> kernels = {product_portable<W>};
#ifdef SERVESCOPE_X86_SIMD
  if (cpu_has_avx2()) kernels.push_back(product_avx2<W>);
  if (cpu_has_avx_vnni()) kernels.push_back(product_vnni<W>);
  if (cpu_has_avx512_vnni()) kernels.push_back(product_avx512<W>);
#endif
  return kernels;
}

// The layout of a 32-column type, for a function of the three.
template <class F>
auto with_layout(gguf::GgmlType type, F&& f) {
  switch (type) {
    case gguf::GgmlType::Q4_0:
      return f(Q4{});
    case gguf::GgmlType::Q5_0:
      return f(Q5{});
    case gguf::GgmlType::Q8_0:
      return f(Q8{});
    default:
      std::abort();  // callers check has_interleaved_kernel
  }
}

}  // namespace

bool has_interleaved_kernel(gguf::GgmlType type) {
  return type == gguf::GgmlType::Q4_0 || type == gguf::GgmlType::Q5_0 ||
         type == gguf::GgmlType::Q8_0 || kquant_interleaved::handles(type);
}


std::vector<uint8_t> interleave_rows(gguf::GgmlType type, const uint8_t* data, int64_t rows,
                                     int64_t cols) {
  if (kquant_interleaved::handles(type))
    return kquant_interleaved::interleave(type, data, rows, cols);
  return with_layout(type, [&]<class W>(W) { return interleave<W>(data, rows, cols); });
}

void interleaved_row(gguf::GgmlType type, const uint8_t* packed, int64_t cols, int64_t row,
                     float* dst) {
  if (kquant_interleaved::handles(type)) {
    kquant_interleaved::row(type, packed, cols, row, dst);
  } else {
    with_layout(type, [&]<class W>(W) { row_of<W>(packed, cols, row, dst); });
  }
}

int32_t interleaved_block_offset(gguf::GgmlType type, const ActivationBlock& x) {
  if (kquant_interleaved::handles(type)) return kquant_interleaved::block_offset(type, x);
  // ActivationBlock::offset holds -8 x each sum of four activations.
  const int32_t minus_8_sum = std::accumulate(std::begin(x.offset), std::end(x.offset), 0);
  return with_layout(type, [&]<class W>(W) { return W::kAdded / 8 * minus_8_sum; });
}

std::vector<InterleavedKernel> interleaved_kernel_variants(gguf::GgmlType type) {
  if (kquant_interleaved::handles(type)) return kquant_interleaved::variants(type);
  return with_layout(type, []<class W>(W) { return variants<W>(); });
}

InterleavedKernel interleaved_kernel(gguf::GgmlType type) {
  static const InterleavedKernel q4 = variants<Q4>().back();
  static const InterleavedKernel q5 = variants<Q5>().back();
  static const InterleavedKernel q8 = variants<Q8>().back();
  static const InterleavedKernel q4_k = kquant_interleaved::variants(gguf::GgmlType::Q4_K).back();
  static const InterleavedKernel q6_k = kquant_interleaved::variants(gguf::GgmlType::Q6_K).back();
  switch (type) {
    case gguf::GgmlType::Q4_K:
      return q4_k;
    case gguf::GgmlType::Q6_K:
      return q6_k;
    case gguf::GgmlType::Q4_0:
      return q4;
    case gguf::GgmlType::Q5_0:
      return q5;
    case gguf::GgmlType::Q8_0:
      return q8;
    default:
      std::abort();  // callers check has_interleaved_kernel
  }
}

}  // namespace servescope::compute
