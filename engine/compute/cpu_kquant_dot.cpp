#include "engine/compute/cpu_kquant_dot.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "engine/compute/cpu_features.h"
#include "engine/gguf/ggml_types.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SERVESCOPE_KQUANT_SIMD 1
#endif

namespace servescope::compute {

#ifdef SERVESCOPE_KQUANT_SIMD
// GCC 12's own AVX-512 intrinsics start from _mm512_undefined values, which its
// uninitialised-use warnings flag inside the header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
namespace {

using gguf::BlockQ4_K;
using gguf::BlockQ5_K;
using gguf::BlockQ6_K;
constexpr int kSuper = gguf::kSuperBlock;

#define SERVESCOPE_KQ_AVX2 __attribute__((target("avx2,fma,f16c")))
#define SERVESCOPE_KQ_AVX512 __attribute__((target("avx512f,avx2,fma,f16c")))

#define KQ_INLINE inline __attribute__((always_inline))

// A half-precision field as float. The hardware conversion differs from gguf::fp16_to_fp32
// only in a signalling NaN's quiet bit, which the scale products below set anyway.
KQ_INLINE SERVESCOPE_KQ_AVX2 float load_half(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return _cvtsh_ss(v);
}

// --- super-block scales, as gguf::dequantize_row rounds them -----------------------------------

// Q4_K / Q5_K: per sub-block of 32, the float scale d * scale and minimum dmin * min.
struct ScalesMins {
  float scale[8];
  float min[8];
};

// The twelve packed bytes rearranged (as llama.cpp does, on 32-bit words) into eight 6-bit
// scales (bytes 0..7) and eight 6-bit minimums (bytes 8..15), then converted eight at a time.
template <class Block>
KQ_INLINE SERVESCOPE_KQ_AVX2 ScalesMins scales_mins(const uint8_t* block) {
  constexpr uint32_t kLow6 = 0x3F3F3F3F;
  constexpr uint32_t kLow4 = 0x0F0F0F0F;
  constexpr uint32_t kLow2 = 0x03030303;
  uint32_t u[4] = {};
  std::memcpy(u, block + offsetof(Block, scales), gguf::kKScaleBytes);
  u[3] = ((u[2] >> 4) & kLow4) | (((u[1] >> 6) & kLow2) << 4);  // minimums 4..7
  const uint32_t first_mins = u[1] & kLow6;                     // minimums 0..3
  u[1] = (u[2] & kLow4) | (((u[0] >> 6) & kLow2) << 4);         // scales 4..7
  u[2] = first_mins;
  u[0] &= kLow6;  // scales 0..3
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(u));
  ScalesMins out;
  _mm256_storeu_ps(out.scale, _mm256_mul_ps(_mm256_set1_ps(load_half(block + offsetof(Block, d))),
                                            _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes))));
  _mm256_storeu_ps(
      out.min, _mm256_mul_ps(_mm256_set1_ps(load_half(block + offsetof(Block, dmin))),
                             _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8)))));
  return out;
}

// The scales read back from memory: broadcasting a value from memory is load-port work, while
// from a register it takes the shuffle port the quants' table look-ups need. (An empty asm
// statement hides where the pointer came from, so the compiler does not keep the values in
// registers.)
template <class T>
KQ_INLINE const T* in_memory(const T* p) {
  asm("" : "+r"(p) : : "memory");
  return p;
}

// Q6_K: per sub-block of 16, the float scale d * scale.
struct Scales16 {
  float scale[16];
};

KQ_INLINE SERVESCOPE_KQ_AVX2 Scales16 q6_k_scales(const uint8_t* block) {
  const __m256 d = _mm256_set1_ps(load_half(block + offsetof(BlockQ6_K, d)));
  const __m128i sc =
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + offsetof(BlockQ6_K, scales)));
  Scales16 out;
  _mm256_storeu_ps(out.scale, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc))));
  _mm256_storeu_ps(
      out.scale + 8,
      _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8)))));
  return out;
}

// --- decoding one super-block into 256 floats (gguf::dequantize_row's values) -----------------

template <int Offset>
KQ_INLINE SERVESCOPE_KQ_AVX512 __m512 iota16() {
  return _mm512_setr_ps(Offset + 0, Offset + 1, Offset + 2, Offset + 3, Offset + 4, Offset + 5,
                        Offset + 6, Offset + 7, Offset + 8, Offset + 9, Offset + 10, Offset + 11,
                        Offset + 12, Offset + 13, Offset + 14, Offset + 15);
}

// The values d * q - m of quants q = Offset .. Offset + 15, rounded as the dequantiser rounds
// each element (a product, then a difference): a table the quants index.
template <int Offset>
KQ_INLINE SERVESCOPE_KQ_AVX512 __m512 value_table(float scale, float min) {
  return _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(scale), iota16<Offset>()), _mm512_set1_ps(min));
}

// (quant * scale) - min for eight quants held as 32-bit integers.
KQ_INLINE SERVESCOPE_KQ_AVX2 __m256 scaled_minus_min(__m256i quants, __m256 scale, __m256 min) {
  return _mm256_sub_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(quants), scale), min);
}

// Q4_K: byte qs[32 c + l] holds element 64 c + l (low nibble) and 64 c + 32 + l (high nibble).
struct FormatQ4_K {
  static constexpr int64_t kBlockElements = kSuper;
  static constexpr size_t kBlockBytes = sizeof(BlockQ4_K);

  template <class Sink>
  KQ_INLINE SERVESCOPE_KQ_AVX512 static void decode_avx512(const uint8_t* block, Sink& out) {
    const ScalesMins decoded = scales_mins<BlockQ4_K>(block);
    const ScalesMins& s = *in_memory(&decoded);
    const uint8_t* qs = block + offsetof(BlockQ4_K, qs);
    for (int c = 0; c < 4; ++c) {
      // Sixteen possible values per sub-block: each quant picks its value from a table
      // (vpermps reads the low four bits of each index).
      const __m512 first = value_table<0>(s.scale[2 * c], s.min[2 * c]);
      const __m512 second = value_table<0>(s.scale[2 * c + 1], s.min[2 * c + 1]);
      for (int half = 0; half < 2; ++half) {
        const __m512i bytes = _mm512_cvtepu8_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + 32 * c + 16 * half)));
        out.put(64 * c + 16 * half, _mm512_permutexvar_ps(bytes, first));
        out.put(64 * c + 32 + 16 * half,
                _mm512_permutexvar_ps(_mm512_srli_epi32(bytes, 4), second));
      }
    }
  }

  template <class Sink>
  KQ_INLINE SERVESCOPE_KQ_AVX2 static void decode_avx2(const uint8_t* block, Sink& out) {
    const ScalesMins decoded = scales_mins<BlockQ4_K>(block);
    const ScalesMins& s = *in_memory(&decoded);
    const uint8_t* qs = block + offsetof(BlockQ4_K, qs);
    const __m256i low_nibble = _mm256_set1_epi32(0x0F);
    for (int c = 0; c < 4; ++c) {
      const __m256 d1 = _mm256_set1_ps(s.scale[2 * c]);
      const __m256 m1 = _mm256_set1_ps(s.min[2 * c]);
      const __m256 d2 = _mm256_set1_ps(s.scale[2 * c + 1]);
      const __m256 m2 = _mm256_set1_ps(s.min[2 * c + 1]);
      for (int g = 0; g < 4; ++g) {
        const __m256i bytes = _mm256_cvtepu8_epi32(
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 32 * c + 8 * g)));
        out.put(64 * c + 8 * g, scaled_minus_min(_mm256_and_si256(bytes, low_nibble), d1, m1));
        out.put(64 * c + 32 + 8 * g, scaled_minus_min(_mm256_srli_epi32(bytes, 4), d2, m2));
      }
    }
  }
};

// Q5_K: Q4_K's nibbles plus a fifth bit: bit 2 c of qh[l] for element 64 c + l, bit 2 c + 1 for
// element 64 c + 32 + l.
struct FormatQ5_K {
  static constexpr int64_t kBlockElements = kSuper;
  static constexpr size_t kBlockBytes = sizeof(BlockQ5_K);

  template <class Sink>
  KQ_INLINE SERVESCOPE_KQ_AVX512 static void decode_avx512(const uint8_t* block, Sink& out) {
    const ScalesMins decoded = scales_mins<BlockQ5_K>(block);
    const ScalesMins& s = *in_memory(&decoded);
    const uint8_t* qs = block + offsetof(BlockQ5_K, qs);
    const uint8_t* qh = block + offsetof(BlockQ5_K, qh);
    const __m512i low_nibble = _mm512_set1_epi32(0x0F);
    const __m512i bit4 = _mm512_set1_epi32(0x10);
    for (int c = 0; c < 4; ++c) {
      // 32 values per sub-block in two registers; vpermt2ps reads the low five bits.
      const __m512 first_low = value_table<0>(s.scale[2 * c], s.min[2 * c]);
      const __m512 first_high = value_table<16>(s.scale[2 * c], s.min[2 * c]);
      const __m512 second_low = value_table<0>(s.scale[2 * c + 1], s.min[2 * c + 1]);
      const __m512 second_high = value_table<16>(s.scale[2 * c + 1], s.min[2 * c + 1]);
      const __m128i first_shift = _mm_cvtsi32_si128(2 * c);
      const __m128i second_shift = _mm_cvtsi32_si128(2 * c + 1);
      for (int half = 0; half < 2; ++half) {
        const __m512i bytes = _mm512_cvtepu8_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + 32 * c + 16 * half)));
        const __m512i high_bits =
            _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qh + 16 * half)));
        const __m512i first = _mm512_or_si512(
            _mm512_and_si512(bytes, low_nibble),
            _mm512_and_si512(_mm512_slli_epi32(_mm512_srl_epi32(high_bits, first_shift), 4), bit4));
        const __m512i second = _mm512_or_si512(
            _mm512_srli_epi32(bytes, 4),
            _mm512_and_si512(_mm512_slli_epi32(_mm512_srl_epi32(high_bits, second_shift), 4),
                             bit4));
        out.put(64 * c + 16 * half, _mm512_permutex2var_ps(first_low, first, first_high));
        out.put(64 * c + 32 + 16 * half, _mm512_permutex2var_ps(second_low, second, second_high));
      }
    }
  }

  template <class Sink>
  KQ_INLINE SERVESCOPE_KQ_AVX2 static void decode_avx2(const uint8_t* block, Sink& out) {
    const ScalesMins decoded = scales_mins<BlockQ5_K>(block);
    const ScalesMins& s = *in_memory(&decoded);
    const uint8_t* qs = block + offsetof(BlockQ5_K, qs);
    const uint8_t* qh = block + offsetof(BlockQ5_K, qh);
    const __m256i low_nibble = _mm256_set1_epi32(0x0F);
    const __m256i bit4 = _mm256_set1_epi32(0x10);
    for (int c = 0; c < 4; ++c) {
      const __m256 d1 = _mm256_set1_ps(s.scale[2 * c]);
      const __m256 m1 = _mm256_set1_ps(s.min[2 * c]);
      const __m256 d2 = _mm256_set1_ps(s.scale[2 * c + 1]);
      const __m256 m2 = _mm256_set1_ps(s.min[2 * c + 1]);
      const __m128i first_shift = _mm_cvtsi32_si128(2 * c);
      const __m128i second_shift = _mm_cvtsi32_si128(2 * c + 1);
      for (int g = 0; g < 4; ++g) {
        const __m256i bytes = _mm256_cvtepu8_epi32(
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 32 * c + 8 * g)));
        const __m256i high_bits =
            _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qh + 8 * g)));
        const __m256i first = _mm256_or_si256(
            _mm256_and_si256(bytes, low_nibble),
            _mm256_and_si256(_mm256_slli_epi32(_mm256_srl_epi32(high_bits, first_shift), 4), bit4));
        const __m256i second = _mm256_or_si256(
            _mm256_srli_epi32(bytes, 4),
            _mm256_and_si256(_mm256_slli_epi32(_mm256_srl_epi32(high_bits, second_shift), 4),
                             bit4));
        out.put(64 * c + 8 * g, scaled_minus_min(first, d1, m1));
        out.put(64 * c + 32 + 8 * g, scaled_minus_min(second, d2, m2));
      }
    }
  }
};

// Q6_K: the signed quants of half h (elements 128 h .. 128 h + 127) as four registers of 32
// bytes, q[k] holding elements 128 h + 32 k + l (sub-blocks 8 h + 2 k and 8 h + 2 k + 1).
KQ_INLINE SERVESCOPE_KQ_AVX2 void q6_k_quants(const uint8_t* block, int h, __m256i (&q)[4]) {
  const uint8_t* ql = block + offsetof(BlockQ6_K, ql) + 64 * h;
  const uint8_t* qh = block + offsetof(BlockQ6_K, qh) + 32 * h;
  const __m256i low0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
  const __m256i low1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
  const __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh));
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const __m256i top = _mm256_set1_epi8(0x30);  // bits 4-5: the quant's top two bits
  const __m256i bias = _mm256_set1_epi8(32);
  // 16-bit shifts move bits across bytes; the masks keep each byte's own bits.
  const __m256i parts[4][2] = {
      {_mm256_and_si256(low0, nibble), _mm256_and_si256(_mm256_slli_epi16(high, 4), top)},
      {_mm256_and_si256(low1, nibble), _mm256_and_si256(_mm256_slli_epi16(high, 2), top)},
      {_mm256_and_si256(_mm256_srli_epi16(low0, 4), nibble), _mm256_and_si256(high, top)},
      {_mm256_and_si256(_mm256_srli_epi16(low1, 4), nibble),
       _mm256_and_si256(_mm256_srli_epi16(high, 2), top)}};
  for (int k = 0; k < 4; ++k) {
    q[k] = _mm256_sub_epi8(_mm256_or_si256(parts[k][0], parts[k][1]), bias);
  }
}

// Q2_K / Q3_K: element 128 h + 32 j + l (l < 32) has its two low bits at bits 2 j of
// qs[32 h + l]; sub-block (16 elements) e / 16. Q2_K: value = (d * scale) * q - dmin * min,
// scale and min the nibbles of scales[i]. Q3_K: bit 4 h + j of hmask[l] clear subtracts 4, and
// value = (d * scale) * q with 6-bit scales stored + 32.
struct Scales16Mins {
  float scale[16];
  float min[16];
};

KQ_INLINE SERVESCOPE_KQ_AVX2 Scales16Mins q2_k_scales(const uint8_t* block) {
  const __m128i packed =
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + offsetof(gguf::BlockQ2_K, scales)));
  const __m128i nibble = _mm_set1_epi8(0x0F);
  const __m128i scales = _mm_and_si128(packed, nibble);
  const __m128i mins = _mm_and_si128(_mm_srli_epi16(packed, 4), nibble);
  const __m256 d = _mm256_set1_ps(load_half(block + offsetof(gguf::BlockQ2_K, d)));
  const __m256 dmin = _mm256_set1_ps(load_half(block + offsetof(gguf::BlockQ2_K, dmin)));
  Scales16Mins out;
  for (int i = 0; i < 2; ++i) {
    const __m128i sc = i == 0 ? scales : _mm_srli_si128(scales, 8);
    const __m128i mn = i == 0 ? mins : _mm_srli_si128(mins, 8);
    _mm256_storeu_ps(out.scale + 8 * i,
                     _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sc))));
    _mm256_storeu_ps(out.min + 8 * i,
                     _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(mn))));
  }
  return out;
}

// Q3_K's twelve bytes rearranged (as llama.cpp does, on 32-bit words) into sixteen bytes, scale
// i in byte i, then less 32 and times d.
KQ_INLINE SERVESCOPE_KQ_AVX2 Scales16 q3_k_scales(const uint8_t* block) {
  constexpr uint32_t kLow4 = 0x0F0F0F0F;
  constexpr uint32_t kLow2 = 0x03030303;
  uint32_t a[4] = {};
  std::memcpy(a, block + offsetof(gguf::BlockQ3_K, scales), 12);
  const uint32_t high = a[2];
  a[2] = ((a[0] >> 4) & kLow4) | (((high >> 4) & kLow2) << 4);
  a[3] = ((a[1] >> 4) & kLow4) | (((high >> 6) & kLow2) << 4);
  a[0] = (a[0] & kLow4) | ((high & kLow2) << 4);
  a[1] = (a[1] & kLow4) | (((high >> 2) & kLow2) << 4);
  const __m128i scales =
      _mm_sub_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a)), _mm_set1_epi8(32));
  const __m256 d = _mm256_set1_ps(load_half(block + offsetof(gguf::BlockQ3_K, d)));
  Scales16 out;
  _mm256_storeu_ps(out.scale, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(scales))));
  _mm256_storeu_ps(
      out.scale + 8,
      _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(scales, 8)))));
  return out;
}

// Table look-ups read the low four index bits; entries k and k + 4 (Q2_K) or k + 8 (Q3_K) hold
// the same value, so the bits above a quant's own may be anything.
KQ_INLINE SERVESCOPE_KQ_AVX512 __m512 q2_k_levels() {
  return _mm512_setr_ps(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3);
}
KQ_INLINE SERVESCOPE_KQ_AVX512 __m512 q3_k_levels() {
  return _mm512_setr_ps(-4, -3, -2, -1, 0, 1, 2, 3, -4, -3, -2, -1, 0, 1, 2, 3);
}

struct FormatQ2_K {
  static constexpr int64_t kBlockElements = kSuper;
  static constexpr size_t kBlockBytes = sizeof(gguf::BlockQ2_K);

  template <class Sink>
  KQ_INLINE SERVESCOPE_KQ_AVX512 static void decode_avx512(const uint8_t* block, Sink& out) {
    const Scales16Mins decoded = q2_k_scales(block);
    const Scales16Mins& s = *in_memory(&decoded);
    const uint8_t* qs = block + offsetof(gguf::BlockQ2_K, qs);
    for (int h = 0; h < 2; ++h) {
      for (int half = 0; half < 2; ++half) {
        const __m512i bytes = _mm512_cvtepu8_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + 32 * h + 16 * half)));
        for (int j = 0; j < 4; ++j) {
          const int i = 8 * h + 2 * j + half;
          const __m512 table = _mm512_sub_ps(
              _mm512_mul_ps(_mm512_set1_ps(s.scale[i]), q2_k_levels()), _mm512_set1_ps(s.min[i]));
          const __m512i index = j == 0 ? bytes : _mm512_srli_epi32(bytes, 2 * j);
          out.put(128 * h + 32 * j + 16 * half, _mm512_permutexvar_ps(index, table));
        }
      }
    }
  }

  template <class Sink>
  KQ_INLINE SERVESCOPE_KQ_AVX2 static void decode_avx2(const uint8_t* block, Sink& out) {
    const Scales16Mins decoded = q2_k_scales(block);
    const Scales16Mins& s = *in_memory(&decoded);
    const uint8_t* qs = block + offsetof(gguf::BlockQ2_K, qs);
    const __m256i three = _mm256_set1_epi32(3);
    for (int h = 0; h < 2; ++h) {
      for (int j = 0; j < 4; ++j) {
        for (int g = 0; g < 4; ++g) {  // elements 8 g .. 8 g + 7 of the 32; g / 2: the half
          const __m256i bytes = _mm256_cvtepu8_epi32(
              _mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 32 * h + 8 * g)));
          const __m256i q = _mm256_and_si256(_mm256_srli_epi32(bytes, 2 * j), three);
          const int i = 8 * h + 2 * j + g / 2;
          out.put(128 * h + 32 * j + 8 * g,
                  scaled_minus_min(q, _mm256_set1_ps(s.scale[i]), _mm256_set1_ps(s.min[i])));
        }
      }
    }
  }
};

struct FormatQ3_K {
  static constexpr int64_t kBlockElements = kSuper;
  static constexpr size_t kBlockBytes = sizeof(gguf::BlockQ3_K);

  template <class Sink>
  KQ_INLINE SERVESCOPE_KQ_AVX512 static void decode_avx512(const uint8_t* block, Sink& out) {
    const Scales16 decoded = q3_k_scales(block);
    const Scales16& s = *in_memory(&decoded);
    const uint8_t* qs = block + offsetof(gguf::BlockQ3_K, qs);
    const uint8_t* hmask = block + offsetof(gguf::BlockQ3_K, hmask);
    const __m512i low_bits = _mm512_set1_epi32(3);
    for (int h = 0; h < 2; ++h) {
      for (int half = 0; half < 2; ++half) {
        const __m512i bytes = _mm512_cvtepu8_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + 32 * h + 16 * half)));
        const __m512i high = _mm512_cvtepu8_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(hmask + 16 * half)));
        for (int j = 0; j < 4; ++j) {
          const int g = 4 * h + j;  // hmask bit g of this group goes to index bit 2
          const __m512i third = g < 2 ? _mm512_slli_epi32(high, 2 - g)
                                      : _mm512_srl_epi32(high, _mm_cvtsi32_si128(g - 2));
          // 0xCA: bit by bit, the quant's low bits where low_bits is set, else the third bit.
          const __m512i index = _mm512_ternarylogic_epi32(
              low_bits, _mm512_srl_epi32(bytes, _mm_cvtsi32_si128(2 * j)), third, 0xCA);
          const int i = 8 * h + 2 * j + half;
          const __m512 table = _mm512_mul_ps(_mm512_set1_ps(s.scale[i]), q3_k_levels());
          out.put(128 * h + 32 * j + 16 * half, _mm512_permutexvar_ps(index, table));
        }
      }
    }
  }

  template <class Sink>
  KQ_INLINE SERVESCOPE_KQ_AVX2 static void decode_avx2(const uint8_t* block, Sink& out) {
    const Scales16 decoded = q3_k_scales(block);
    const Scales16& s = *in_memory(&decoded);
    const uint8_t* qs = block + offsetof(gguf::BlockQ3_K, qs);
    const uint8_t* hmask = block + offsetof(gguf::BlockQ3_K, hmask);
    const __m256i three = _mm256_set1_epi32(3);
    const __m256i one = _mm256_set1_epi32(1);
    for (int h = 0; h < 2; ++h) {
      for (int j = 0; j < 4; ++j) {
        const __m128i low_shift = _mm_cvtsi32_si128(2 * j);
        const __m128i high_shift = _mm_cvtsi32_si128(4 * h + j);
        for (int g = 0; g < 4; ++g) {
          const __m256i bytes = _mm256_cvtepu8_epi32(
              _mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 32 * h + 8 * g)));
          const __m256i high = _mm256_cvtepu8_epi32(
              _mm_loadl_epi64(reinterpret_cast<const __m128i*>(hmask + 8 * g)));
          // q = low two bits + 4 * third bit - 4, in -4 .. 3
          const __m256i q = _mm256_sub_epi32(
              _mm256_or_si256(
                  _mm256_and_si256(_mm256_srl_epi32(bytes, low_shift), three),
                  _mm256_slli_epi32(_mm256_and_si256(_mm256_srl_epi32(high, high_shift), one), 2)),
              _mm256_set1_epi32(4));
          const int i = 8 * h + 2 * j + g / 2;
          out.put(128 * h + 32 * j + 8 * g,
                  _mm256_mul_ps(_mm256_set1_ps(s.scale[i]), _mm256_cvtepi32_ps(q)));
        }
      }
    }
  }
};

struct FormatQ6_K {
  static constexpr int64_t kBlockElements = kSuper;
  static constexpr size_t kBlockBytes = sizeof(BlockQ6_K);

  template <class Sink>
  KQ_INLINE SERVESCOPE_KQ_AVX512 static void decode_avx512(const uint8_t* block, Sink& out) {
    const Scales16 decoded = q6_k_scales(block);
    const Scales16& s = *in_memory(&decoded);
    for (int h = 0; h < 2; ++h) {
      __m256i q[4];
      q6_k_quants(block, h, q);
      for (int k = 0; k < 4; ++k) {
        for (int half = 0; half < 2; ++half) {  // one sub-block of 16
          const __m128i bytes =
              half == 0 ? _mm256_castsi256_si128(q[k]) : _mm256_extracti128_si256(q[k], 1);
          const __m512 quants = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes));
          out.put(128 * h + 32 * k + 16 * half,
                  _mm512_mul_ps(_mm512_set1_ps(s.scale[8 * h + 2 * k + half]), quants));
        }
      }
    }
  }

  template <class Sink>
  KQ_INLINE SERVESCOPE_KQ_AVX2 static void decode_avx2(const uint8_t* block, Sink& out) {
    const Scales16 decoded = q6_k_scales(block);
    const Scales16& s = *in_memory(&decoded);
    for (int h = 0; h < 2; ++h) {
      __m256i q[4];
      q6_k_quants(block, h, q);
      for (int k = 0; k < 4; ++k) {
        const __m128i halves[2] = {_mm256_castsi256_si128(q[k]), _mm256_extracti128_si256(q[k], 1)};
        for (int g = 0; g < 4; ++g) {  // eight elements; g / 2 is the sub-block
          const __m128i bytes = (g % 2 == 0) ? halves[g / 2] : _mm_srli_si128(halves[g / 2], 8);
          const __m256 quants = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes));
          out.put(128 * h + 32 * k + 8 * g,
                  _mm256_mul_ps(_mm256_set1_ps(s.scale[8 * h + 2 * k + g / 2]), quants));
        }
      }
    }
  }
};

// --- the 32-element types K-quant files fall back to -------------------------------------------
// llama.cpp's quantize stores a matrix whose rows are not whole super-blocks (an FFN width of
// 672, say) as Q5_0 (in Q4_K files), Q5_1 (Q5_K) or Q4_1; they get the same decoders. Quant j of
// a block: low nibble of qs[j] (j < 16) or high nibble of qs[j - 16], plus bit j of qh as 16.
template <class Block, bool kFifthBit, bool kMin>
struct FormatLegacy {
  static constexpr int64_t kBlockElements = gguf::kQuantBlock;
  static constexpr size_t kBlockBytes = sizeof(Block);

  KQ_INLINE static uint32_t high_bits(const uint8_t* block) {
    uint32_t qh = 0;
    if constexpr (kFifthBit) std::memcpy(&qh, block + offsetof(Block, qh), sizeof qh);
    return qh;
  }

  // The float of quant q, as gguf::dequantize_row rounds it: (q - 16) * d, or q * d + m.
  KQ_INLINE SERVESCOPE_KQ_AVX512 static __m512 values(__m512 q, __m512 d, __m512 m) {
    if constexpr (kMin) return _mm512_add_ps(_mm512_mul_ps(q, d), m);
    return _mm512_mul_ps(_mm512_sub_ps(q, _mm512_set1_ps(16.0f)), d);
  }
  KQ_INLINE SERVESCOPE_KQ_AVX2 static __m256 values(__m256i q, __m256 d, __m256 m) {
    const __m256 f = _mm256_cvtepi32_ps(q);
    if constexpr (kMin) return _mm256_add_ps(_mm256_mul_ps(f, d), m);
    return _mm256_mul_ps(_mm256_sub_ps(f, _mm256_set1_ps(16.0f)), d);
  }

  template <class Sink>
  KQ_INLINE SERVESCOPE_KQ_AVX512 static void decode_avx512(const uint8_t* block, Sink& out) {
    const __m512 d = _mm512_set1_ps(load_half(block + offsetof(Block, d)));
    const __m512 m = _mm512_set1_ps(kMin ? load_half(block + offset_of_min()) : 0.0f);
    const uint32_t qh = high_bits(block);
    const __m512i bytes = _mm512_cvtepu8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + offsetof(Block, qs))));
    __m512i q[2] = {_mm512_and_si512(bytes, _mm512_set1_epi32(0x0F)), _mm512_srli_epi32(bytes, 4)};
    if constexpr (kFifthBit) {
      const __m512i sixteen = _mm512_set1_epi32(16);
      q[0] = _mm512_mask_or_epi32(q[0], static_cast<__mmask16>(qh & 0xFFFF), q[0], sixteen);
      q[1] = _mm512_mask_or_epi32(q[1], static_cast<__mmask16>(qh >> 16), q[1], sixteen);
    }
    for (int i = 0; i < 2; ++i) out.put(16 * i, values(_mm512_cvtepi32_ps(q[i]), d, m));
  }

  template <class Sink>
  KQ_INLINE SERVESCOPE_KQ_AVX2 static void decode_avx2(const uint8_t* block, Sink& out) {
    const __m256 d = _mm256_set1_ps(load_half(block + offsetof(Block, d)));
    const __m256 m = _mm256_set1_ps(kMin ? load_half(block + offset_of_min()) : 0.0f);
    const __m256i qh = _mm256_set1_epi32(static_cast<int>(high_bits(block)));
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const uint8_t* qs = block + offsetof(Block, qs);
    for (int g = 0; g < 4; ++g) {  // elements 8 g .. 8 g + 7
      const __m256i bytes =
          _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 8 * (g % 2))));
      __m256i q =
          g < 2 ? _mm256_and_si256(bytes, _mm256_set1_epi32(0x0F)) : _mm256_srli_epi32(bytes, 4);
      if constexpr (kFifthBit) {
        const __m256i bit = _mm256_and_si256(
            _mm256_srlv_epi32(qh, _mm256_add_epi32(lane, _mm256_set1_epi32(8 * g))),
            _mm256_set1_epi32(1));
        q = _mm256_or_si256(q, _mm256_slli_epi32(bit, 4));
      }
      out.put(8 * g, values(q, d, m));
    }
  }

  static constexpr size_t offset_of_min() {
    if constexpr (kMin) return offsetof(Block, m);
    return 0;
  }
};

using FormatQ4_1 = FormatLegacy<gguf::BlockQ4_1, false, true>;
using FormatQ5_0 = FormatLegacy<gguf::BlockQ5_0, true, false>;
using FormatQ5_1 = FormatLegacy<gguf::BlockQ5_1, true, true>;

// --- the dot products ----------------------------------------------------------------------------
// Every (row, token) sum keeps 64 partial sums: element j of the row is fused-multiply-added
// into lane j % 64, in increasing j. At the end the lanes fold to 16 (lane l: ((s[l] +
// s[l + 16]) + s[l + 32]) + s[l + 48]), then to 8, then by the same tree to one. AVX-512 holds
// the lanes in four registers of 16, AVX2 in eight of 8; both do exactly these operations, so
// they give the same bits, and so does a token whatever batch it is in.

constexpr int64_t kChunk = 2048;  // decoded elements held at once (8 KiB, stays in L1)
constexpr int64_t kTokensPerPass = 32;

KQ_INLINE SERVESCOPE_KQ_AVX2 float sum8(__m256 v) {
  const __m128 four = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 two = _mm_add_ps(four, _mm_movehl_ps(four, four));
  return _mm_cvtss_f32(_mm_add_ss(two, _mm_shuffle_ps(two, two, 1)));
}

// Each instruction set: its registers of lanes (Acc), how many rows (kRows) or tokens (kGroup)
// it keeps in registers at once, and its sinks for decoded values: Store writes them to a
// buffer, Fma multiplies them into one token's lanes (Shift: the lane group a block starts at;
// a 32-element block at an odd index starts half way through the 64 lanes).
struct Avx512 {
  using Acc = __m512[4];
  static constexpr int kRows = 4;   // a lone token: four rows' 16 accumulators
  static constexpr int kGroup = 4;  // a batch: four tokens share each load of decoded values
  static constexpr int kHalfShift = 2;

  SERVESCOPE_KQ_AVX512 static void zero(Acc& acc) {
    for (auto& a : acc) a = _mm512_setzero_ps();
  }
  SERVESCOPE_KQ_AVX512 static void load(Acc& acc, const float* lanes) {
    for (int i = 0; i < 4; ++i) acc[i] = _mm512_loadu_ps(lanes + 16 * i);
  }
  SERVESCOPE_KQ_AVX512 static void store(const Acc& acc, float* lanes) {
    for (int i = 0; i < 4; ++i) _mm512_storeu_ps(lanes + 16 * i, acc[i]);
  }
  // G tokens (x + t * x_stride) against len decoded values; len: a multiple of 32 (a last
  // half row of lanes goes to lanes 0..31).
  template <int G>
  SERVESCOPE_KQ_AVX512 static void accumulate(const float* w, const float* x, int64_t x_stride,
                                              int64_t len, Acc (&acc)[G]) {
    int64_t j = 0;
    for (; j + 64 <= len; j += 64) {
      for (int i = 0; i < 4; ++i) {
        const __m512 v = _mm512_loadu_ps(w + j + 16 * i);
        for (int t = 0; t < G; ++t) {
          acc[t][i] = _mm512_fmadd_ps(v, _mm512_loadu_ps(x + t * x_stride + j + 16 * i), acc[t][i]);
        }
      }
    }
    if (j < len) {
      for (int i = 0; i < 2; ++i) {
        const __m512 v = _mm512_loadu_ps(w + j + 16 * i);
        for (int t = 0; t < G; ++t) {
          acc[t][i] = _mm512_fmadd_ps(v, _mm512_loadu_ps(x + t * x_stride + j + 16 * i), acc[t][i]);
        }
      }
    }
  }
  SERVESCOPE_KQ_AVX512 static float reduce(const Acc& acc) {
    const __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), acc[2]), acc[3]);
    const __m256 low = _mm512_castps512_ps256(s);
    const __m256 high = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1));
    return sum8(_mm256_add_ps(low, high));
  }

  struct Store {
    float* out;
    KQ_INLINE SERVESCOPE_KQ_AVX512 void put(int at, __m512 v) { _mm512_storeu_ps(out + at, v); }
  };
  template <int Shift>
  struct Fma {
    const float* x;
    Acc& acc;
    KQ_INLINE SERVESCOPE_KQ_AVX512 void put(int at, __m512 v) {
      __m512& a = acc[(at / 16 + Shift) % 4];
      a = _mm512_fmadd_ps(v, _mm512_loadu_ps(x + at), a);
    }
  };
  template <class Format, class Sink>
  SERVESCOPE_KQ_AVX512 static void decode_block(const uint8_t* block, Sink& sink) {
    Format::decode_avx512(block, sink);
  }
};

struct Avx2 {
  using Acc = __m256[8];
  static constexpr int kRows = 1;  // eight registers per (row, token) leave room for one
  static constexpr int kGroup = 1;
  static constexpr int kHalfShift = 4;

  SERVESCOPE_KQ_AVX2 static void zero(Acc& acc) {
    for (auto& a : acc) a = _mm256_setzero_ps();
  }
  SERVESCOPE_KQ_AVX2 static void load(Acc& acc, const float* lanes) {
    for (int i = 0; i < 8; ++i) acc[i] = _mm256_loadu_ps(lanes + 8 * i);
  }
  SERVESCOPE_KQ_AVX2 static void store(const Acc& acc, float* lanes) {
    for (int i = 0; i < 8; ++i) _mm256_storeu_ps(lanes + 8 * i, acc[i]);
  }
  template <int G>
  SERVESCOPE_KQ_AVX2 static void accumulate(const float* w, const float* x, int64_t x_stride,
                                            int64_t len, Acc (&acc)[G]) {
    int64_t j = 0;
    for (; j + 64 <= len; j += 64) {
      for (int i = 0; i < 8; ++i) {
        const __m256 v = _mm256_loadu_ps(w + j + 8 * i);
        for (int t = 0; t < G; ++t) {
          acc[t][i] = _mm256_fmadd_ps(v, _mm256_loadu_ps(x + t * x_stride + j + 8 * i), acc[t][i]);
        }
      }
    }
    if (j < len) {
      for (int i = 0; i < 4; ++i) {
        const __m256 v = _mm256_loadu_ps(w + j + 8 * i);
        for (int t = 0; t < G; ++t) {
          acc[t][i] = _mm256_fmadd_ps(v, _mm256_loadu_ps(x + t * x_stride + j + 8 * i), acc[t][i]);
        }
      }
    }
  }
  SERVESCOPE_KQ_AVX2 static float reduce(const Acc& acc) {
    // Lanes 0..7 and 8..15 of the 16-lane fold, as the AVX-512 register holds them.
    const __m256 low = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(acc[0], acc[2]), acc[4]), acc[6]);
    const __m256 high = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(acc[1], acc[3]), acc[5]), acc[7]);
    return sum8(_mm256_add_ps(low, high));
  }

  struct Store {
    float* out;
    KQ_INLINE SERVESCOPE_KQ_AVX2 void put(int at, __m256 v) { _mm256_storeu_ps(out + at, v); }
  };
  template <int Shift>
  struct Fma {
    const float* x;
    Acc& acc;
    KQ_INLINE SERVESCOPE_KQ_AVX2 void put(int at, __m256 v) {
      __m256& a = acc[(at / 8 + Shift) % 8];
      a = _mm256_fmadd_ps(v, _mm256_loadu_ps(x + at), a);
    }
  };
  template <class Format, class Sink>
  SERVESCOPE_KQ_AVX2 static void decode_block(const uint8_t* block, Sink& sink) {
    Format::decode_avx2(block, sink);
  }
};

// The entry points inline everything they call (flatten): the compiler's inlining budget for
// this file is otherwise spent before the last types' decoders, whose registers then travel
// through memory.
#define SERVESCOPE_KQ_FLATTEN __attribute__((flatten))

// The drivers below carry no target attribute of their own: they are always inlined into the
// AVX2 or AVX-512 entry points, and the instruction set's functions then inline into them.

// Blocks [first, first + blocks) of a row decoded into out.
template <class Isa, class Format>
KQ_INLINE void decode_blocks(const uint8_t* row, int64_t first, int64_t blocks, float* out) {
  for (int64_t b = 0; b < blocks; ++b) {
    typename Isa::Store sink{out + b * Format::kBlockElements};
    Isa::template decode_block<Format>(row + (first + b) * Format::kBlockBytes, sink);
  }
}

// R rows against one token without a buffer: each decoded register goes straight into the
// lanes of its elements, in the same order as the buffered path takes them.
template <class Isa, class Format, int R>
KQ_INLINE void dot_decoding(const uint8_t* rows, uint64_t row_stride, const float* x, int64_t n,
                            typename Isa::Acc (&acc)[R]) {
  constexpr int64_t kElements = Format::kBlockElements;
  const int64_t blocks = n / kElements;
  const auto block_of = [&](int r, int64_t b) {
    return rows + static_cast<uint64_t>(r) * row_stride + b * Format::kBlockBytes;
  };
  int64_t b = 0;
  if constexpr (kElements % 64 != 0) {  // 32-element blocks: a pair fills the 64 lanes once
    for (; b + 2 <= blocks; b += 2) {
      for (int r = 0; r < R; ++r) {
        typename Isa::template Fma<0> first{x + b * kElements, acc[r]};
        Isa::template decode_block<Format>(block_of(r, b), first);
        typename Isa::template Fma<Isa::kHalfShift> second{x + (b + 1) * kElements, acc[r]};
        Isa::template decode_block<Format>(block_of(r, b + 1), second);
      }
    }
  }
  for (; b < blocks; ++b) {
    for (int r = 0; r < R; ++r) {
      typename Isa::template Fma<0> sink{x + b * kElements, acc[r]};
      Isa::template decode_block<Format>(block_of(r, b), sink);
    }
  }
}

template <class Isa, class Format, int R>
KQ_INLINE void dot_rows_one_token(const uint8_t* rows, uint64_t row_stride, const float* x,
                                  int64_t n, float* out) {
  typename Isa::Acc acc[R];
  for (auto& a : acc) Isa::zero(a);
  dot_decoding<Isa, Format, R>(rows, row_stride, x, n, acc);
  for (int r = 0; r < R; ++r) out[r] = Isa::reduce(acc[r]);
}

// G tokens against a decoded row held whole in the buffer w.
template <class Isa, int G>
KQ_INLINE void dot_group_decoded(const float* w, const float* x, int64_t x_stride, int64_t n,
                                 float* out, int64_t out_stride) {
  typename Isa::Acc acc[G];
  for (auto& a : acc) Isa::zero(a);
  Isa::template accumulate<G>(w, x, x_stride, n, acc);
  for (int t = 0; t < G; ++t) out[t * out_stride] = Isa::reduce(acc[t]);
}

// One row against `tokens` tokens: the row is decoded once, a chunk at a time, and each chunk
// is multiplied with every token's activations while it is in L1.
template <class Isa, class Format>
KQ_INLINE void dot_row_tokens(const uint8_t* row, const float* x, int64_t x_stride, int64_t tokens,
                              int64_t n, float* out, int64_t out_stride) {
  constexpr int G = Isa::kGroup;
  if (tokens == 1) {
    dot_rows_one_token<Isa, Format, 1>(row, 0, x, n, out);
    return;
  }
  alignas(64) float w[kChunk];
  if (n <= kChunk) {  // the whole row at once: each token's lanes stay in registers
    decode_blocks<Isa, Format>(row, 0, n / Format::kBlockElements, w);
    int64_t t = 0;
    for (; t + G <= tokens; t += G) {
      dot_group_decoded<Isa, G>(w, x + t * x_stride, x_stride, n, out + t * out_stride, out_stride);
    }
    for (; t < tokens; ++t) {
      dot_group_decoded<Isa, 1>(w, x + t * x_stride, x_stride, n, out + t * out_stride, out_stride);
    }
    return;
  }
  alignas(64) float lanes[kTokensPerPass][64];
  for (int64_t t0 = 0; t0 < tokens; t0 += kTokensPerPass) {
    const int64_t count = std::min(kTokensPerPass, tokens - t0);
    for (int64_t j = 0; j < n; j += kChunk) {
      const int64_t len = std::min(kChunk, n - j);
      decode_blocks<Isa, Format>(row, j / Format::kBlockElements, len / Format::kBlockElements, w);
      for (int64_t t = 0; t < count; ++t) {
        typename Isa::Acc acc[1];
        if (j == 0) {
          Isa::zero(acc[0]);
        } else {
          Isa::load(acc[0], lanes[t]);
        }
        Isa::template accumulate<1>(w, x + (t0 + t) * x_stride + j, x_stride, len, acc);
        Isa::store(acc[0], lanes[t]);
      }
    }
    for (int64_t t = 0; t < count; ++t) {
      typename Isa::Acc acc;
      Isa::load(acc, lanes[t]);
      out[(t0 + t) * out_stride] = Isa::reduce(acc);
    }
  }
}

// Rows [0, n_rows) of a matrix: a lone token takes kRows rows side by side (independent
// accumulator chains, several rows' reads in flight); a batch goes row by row.
template <class Isa, class Format>
KQ_INLINE void dot_rows(const uint8_t* rows, uint64_t row_stride, int64_t n_rows, const float* x,
                        int64_t x_stride, int64_t tokens, int64_t n, float* out,
                        int64_t out_stride) {
  int64_t r = 0;
  if (tokens == 1) {
    constexpr int R = Isa::kRows;
    for (; r + R <= n_rows; r += R) {
      dot_rows_one_token<Isa, Format, R>(rows + static_cast<uint64_t>(r) * row_stride, row_stride,
                                         x, n, out + r);
    }
  }
  for (; r < n_rows; ++r) {
    dot_row_tokens<Isa, Format>(rows + static_cast<uint64_t>(r) * row_stride, x, x_stride, tokens,
                                n, out + r, out_stride);
  }
}

template <class Format>
SERVESCOPE_KQ_FLATTEN SERVESCOPE_KQ_AVX512 void dot_tokens_avx512(const uint8_t* row,
                                                                  const float* x, int64_t x_stride,
                                                                  int64_t tokens, int64_t n,
                                                                  float* out, int64_t out_stride) {
  dot_row_tokens<Avx512, Format>(row, x, x_stride, tokens, n, out, out_stride);
}

template <class Format>
SERVESCOPE_KQ_FLATTEN SERVESCOPE_KQ_AVX2 void dot_tokens_avx2(const uint8_t* row, const float* x,
                                                              int64_t x_stride, int64_t tokens,
                                                              int64_t n, float* out,
                                                              int64_t out_stride) {
  dot_row_tokens<Avx2, Format>(row, x, x_stride, tokens, n, out, out_stride);
}

template <class Format>
SERVESCOPE_KQ_FLATTEN SERVESCOPE_KQ_AVX512 void dot_rows_avx512(const uint8_t* rows,
                                                                uint64_t row_stride, int64_t n_rows,
                                                                const float* x, int64_t x_stride,
                                                                int64_t tokens, int64_t n,
                                                                float* out, int64_t out_stride) {
  dot_rows<Avx512, Format>(rows, row_stride, n_rows, x, x_stride, tokens, n, out, out_stride);
}

template <class Format>
SERVESCOPE_KQ_FLATTEN SERVESCOPE_KQ_AVX2 void dot_rows_avx2(const uint8_t* rows,
                                                            uint64_t row_stride, int64_t n_rows,
                                                            const float* x, int64_t x_stride,
                                                            int64_t tokens, int64_t n, float* out,
                                                            int64_t out_stride) {
  dot_rows<Avx2, Format>(rows, row_stride, n_rows, x, x_stride, tokens, n, out, out_stride);
}

template <RowDotTokens Kernel>
float dot_one(const uint8_t* row, const float* x, int64_t n) {
  float out = 0.0f;
  Kernel(row, x, 0, 1, n, &out, 0);
  return out;
}

template <class Format>
SERVESCOPE_KQ_FLATTEN SERVESCOPE_KQ_AVX512 void dequantize_avx512(const uint8_t* row, float* dst,
                                                                  int64_t n) {
  decode_blocks<Avx512, Format>(row, 0, n / Format::kBlockElements, dst);
}

template <class Format>
SERVESCOPE_KQ_FLATTEN SERVESCOPE_KQ_AVX2 void dequantize_avx2(const uint8_t* row, float* dst,
                                                              int64_t n) {
  decode_blocks<Avx2, Format>(row, 0, n / Format::kBlockElements, dst);
}

template <class Format>
KQuantKernels avx512_kernels() {
  return {"avx512", dot_one<dot_tokens_avx512<Format>>, dot_tokens_avx512<Format>,
          dot_rows_avx512<Format>, dequantize_avx512<Format>};
}

template <class Format>
KQuantKernels avx2_kernels() {
  return {"avx2", dot_one<dot_tokens_avx2<Format>>, dot_tokens_avx2<Format>, dot_rows_avx2<Format>,
          dequantize_avx2<Format>};
}

template <class Format>
std::vector<KQuantKernels> variants_of() {
  std::vector<KQuantKernels> out;
  if (cpu_has_avx2()) out.push_back(avx2_kernels<Format>());
  if (cpu_has_avx512()) out.push_back(avx512_kernels<Format>());
  return out;
}

}  // namespace
#pragma GCC diagnostic pop

std::vector<KQuantKernels> kquant_kernel_variants(gguf::GgmlType type) {
  switch (type) {
    case gguf::GgmlType::Q2_K:
      return variants_of<FormatQ2_K>();
    case gguf::GgmlType::Q3_K:
      return variants_of<FormatQ3_K>();
    case gguf::GgmlType::Q4_K:
      return variants_of<FormatQ4_K>();
    case gguf::GgmlType::Q5_K:
      return variants_of<FormatQ5_K>();
    case gguf::GgmlType::Q6_K:
      return variants_of<FormatQ6_K>();
    case gguf::GgmlType::Q4_1:
      return variants_of<FormatQ4_1>();
    case gguf::GgmlType::Q5_0:
      return variants_of<FormatQ5_0>();
    case gguf::GgmlType::Q5_1:
      return variants_of<FormatQ5_1>();
    default:
      return {};
  }
}

KQuantKernels kquant_kernels_for(gguf::GgmlType type) {
  // Chosen once per CPU and type: the last variant is the widest this CPU runs.
  static const auto widest = [](gguf::GgmlType t) {
    const std::vector<KQuantKernels> variants = kquant_kernel_variants(t);
    return variants.empty() ? KQuantKernels{} : variants.back();
  };
  static const KQuantKernels q2_k = widest(gguf::GgmlType::Q2_K);
  static const KQuantKernels q3_k = widest(gguf::GgmlType::Q3_K);
  static const KQuantKernels q4_k = widest(gguf::GgmlType::Q4_K);
  static const KQuantKernels q5_k = widest(gguf::GgmlType::Q5_K);
  static const KQuantKernels q6_k = widest(gguf::GgmlType::Q6_K);
  static const KQuantKernels q4_1 = widest(gguf::GgmlType::Q4_1);
  static const KQuantKernels q5_0 = widest(gguf::GgmlType::Q5_0);
  static const KQuantKernels q5_1 = widest(gguf::GgmlType::Q5_1);
  switch (type) {
    case gguf::GgmlType::Q2_K:
      return q2_k;
    case gguf::GgmlType::Q3_K:
      return q3_k;
    case gguf::GgmlType::Q4_K:
      return q4_k;
    case gguf::GgmlType::Q5_K:
      return q5_k;
    case gguf::GgmlType::Q6_K:
      return q6_k;
    case gguf::GgmlType::Q4_1:
      return q4_1;
    case gguf::GgmlType::Q5_0:
      return q5_0;
    case gguf::GgmlType::Q5_1:
      return q5_1;
    default:
      return {};
  }
}

#else  // no x86 SIMD: the portable dequantising kernels serve every K-quant type

std::vector<KQuantKernels> kquant_kernel_variants(gguf::GgmlType) { return {}; }
KQuantKernels kquant_kernels_for(gguf::GgmlType) { return {}; }

#endif

}  // namespace servescope::compute
