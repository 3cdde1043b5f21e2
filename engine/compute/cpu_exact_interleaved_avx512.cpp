// The AVX-512 variants of the exact interleaved kernels (cpu_exact_interleaved.h): the same
// sums as the portable ones, bit for bit, with 16 rows in a register.
#include <algorithm>

#include "engine/compute/cpu_exact_formats.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SERVESCOPE_X86_SIMD 1
#define SERVESCOPE_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw")))
#endif

namespace servescope::compute::exact {

#ifdef SERVESCOPE_X86_SIMD
namespace {

constexpr int kMaxTokens = 4;  // tokens a kernel call carries at once (registers)

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

// Dequantised tiles: a weight's float x 2^power times d x 2^-power (both exact), 16 rows to a
// column of the panel.
template <class Simd, int K, int H>
SERVESCOPE_AVX512 inline void store_column(const typename Simd::ChunkType& chunk, __m512 d,
                                           int64_t col, int64_t width, float* dst) {
  constexpr int kPower = Simd::Format::power(K, H);
  const __m512 scaled_d = _mm512_mul_ps(d, _mm512_set1_ps(1.0f / static_cast<float>(1 << kPower)));
  _mm512_storeu_ps(dst + col * width, _mm512_mul_ps(Simd::template weights<K, H>(chunk), scaled_d));
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

// Each type's work on one group of 16 rows: add_sums adds T tokens' row sums into total[t]
// (blocks_per_group blocks of the group's rows), write_columns writes the group's dequantised
// columns into a tile's F32 panels. The drivers below run them over the rows and tokens.
template <class Simd>
struct BlockKernels {  // Q4_0, Q5_0, Q8_0
  using Format = typename Simd::Format;
  using Block = typename Format::Block;
  static constexpr GgmlType kType = Format::kType;
  static constexpr int64_t kColumnsPerBlock = kQuantBlock;

  template <int T>
  SERVESCOPE_AVX512 static void add_sums(const Block* group, int64_t cols, const float* prepared,
                                         int64_t stride, __m512 (&total)[T]) {
    const int64_t blocks = cols / kQuantBlock;
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
  }

  SERVESCOPE_AVX512 static void write_columns(const Block* group, int64_t cols, float* dst,
                                              int64_t width) {
    const int64_t blocks = cols / kQuantBlock;
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
};

struct Q4KKernels {
  using Block = Q4K::Block;
  static constexpr GgmlType kType = GgmlType::Q4_K;
  static constexpr int64_t kColumnsPerBlock = kSuperBlock;

  template <int T>
  SERVESCOPE_AVX512 static void add_sums(const Block* group, int64_t cols, const float* prepared,
                                         int64_t stride, __m512 (&total)[T]) {
    const int64_t supers = cols / kSuperBlock;
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
  }

  SERVESCOPE_AVX512 static void write_columns(const Block* group, int64_t cols, float* dst,
                                              int64_t width) {
    const int64_t supers = cols / kSuperBlock;
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
};

struct Q6KKernels {
  using Block = Q6K::Block;
  static constexpr GgmlType kType = GgmlType::Q6_K;
  static constexpr int64_t kColumnsPerBlock = kSuperBlock;

  template <int T>
  SERVESCOPE_AVX512 static void add_sums(const Block* group, int64_t cols, const float* prepared,
                                         int64_t stride, __m512 (&total)[T]) {
    const int64_t supers = cols / kSuperBlock;
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
  }

  SERVESCOPE_AVX512 static void write_columns(const Block* group, int64_t cols, float* dst,
                                              int64_t width) {
    const int64_t supers = cols / kSuperBlock;
    for (int64_t s = 0; s < supers; ++s) {
      const __m512 d = halves_to_floats(group[s].d);
      for (int a = 0; a < Q6K::kBlocks; ++a) {
        const int64_t first_col = s * kSuperBlock + a * kQuantBlock;
        q6k_half_columns<0>(group[s], a, d, first_col, width, dst);
        q6k_half_columns<1>(group[s], a, d, first_col, width, dst);
      }
    }
  }
};

// Groups of 16 rows in [first_row, end_row) against T tokens.
template <class Kernels, int T>
SERVESCOPE_AVX512 void groups_avx512(const uint8_t* packed, int64_t cols, int64_t first_row,
                                     int64_t end_row, const float* prepared, int64_t stride,
                                     float* out, int64_t out_stride) {
  const int64_t per_group = cols / Kernels::kColumnsPerBlock;
  const auto* all = reinterpret_cast<const typename Kernels::Block*>(packed);
  for (int64_t row = first_row; row < end_row; row += kInterleavedRows) {
    __m512 total[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) total[t] = _mm512_setzero_ps();
    Kernels::template add_sums<T>(all + row / kInterleavedRows * per_group, cols, prepared, stride,
                                  total);
    store_rows(total, row, end_row, out, out_stride);
  }
}

// Tokens four at a time, then the rest.
template <class Kernels>
void exact_avx512(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,
                  const float* prepared, int64_t tokens, float* out, int64_t out_stride) {
  const int64_t stride = exact_prepared_floats(Kernels::kType, cols);
  int64_t t = 0;
  for (; t + kMaxTokens <= tokens; t += kMaxTokens) {
    groups_avx512<Kernels, kMaxTokens>(packed, cols, first_row, end_row, prepared + t * stride,
                                       stride, out + t * out_stride, out_stride);
  }
  const float* x = prepared + t * stride;
  float* o = out + t * out_stride;
  switch (tokens - t) {
    case 3:
      groups_avx512<Kernels, 3>(packed, cols, first_row, end_row, x, stride, o, out_stride);
      break;
    case 2:
      groups_avx512<Kernels, 2>(packed, cols, first_row, end_row, x, stride, o, out_stride);
      break;
    case 1:
      groups_avx512<Kernels, 1>(packed, cols, first_row, end_row, x, stride, o, out_stride);
      break;
    default:
      break;
  }
}

// A tile of `rows` rows from first_row (a multiple of 16), group by group, into its panels.
template <class Kernels>
SERVESCOPE_AVX512 void panels_avx512(const uint8_t* packed, int64_t cols, int64_t first_row,
                                     int64_t rows, float* panels) {
  const int64_t per_group = cols / Kernels::kColumnsPerBlock;
  const auto* all = reinterpret_cast<const typename Kernels::Block*>(packed);
  const PanelLayout layout = panel_layout(GgmlType::F32, rows, cols);
  for (int64_t p = 0; p < layout.panels(); ++p) {
    int64_t width = 0;
    float* dst = panel_row_start(panels, layout, p * kPanelRows, width);
    Kernels::write_columns(all + (first_row / kInterleavedRows + p) * per_group, cols, dst, width);
  }
}

#pragma GCC diagnostic pop

}  // namespace

Avx512Kernels avx512_kernels(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_0:
      return {exact_avx512<BlockKernels<Q4Avx512>>, panels_avx512<BlockKernels<Q4Avx512>>};
    case GgmlType::Q8_0:
      return {exact_avx512<BlockKernels<Q8Avx512>>, panels_avx512<BlockKernels<Q8Avx512>>};
    case GgmlType::Q5_0:
      return {exact_avx512<BlockKernels<Q5Avx512>>, panels_avx512<BlockKernels<Q5Avx512>>};
    case GgmlType::Q4_K:
      return {exact_avx512<Q4KKernels>, panels_avx512<Q4KKernels>};
    case GgmlType::Q6_K:
      return {exact_avx512<Q6KKernels>, panels_avx512<Q6KKernels>};
    default:
      return {};
  }
}
#else
Avx512Kernels avx512_kernels(GgmlType /*type*/) { return {}; }
#endif

}  // namespace servescope::compute::exact
