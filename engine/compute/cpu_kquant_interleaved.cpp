#include "engine/compute/cpu_kquant_interleaved.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <numeric>

#include "engine/compute/cpu_block_dot.h"
#include "engine/compute/cpu_features.h"
#include "engine/compute/cpu_int8_broadcast.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SERVESCOPE_KQI_SIMD 1
#define SERVESCOPE_KQI_AVX512 \
  __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")))
#define SERVESCOPE_KQI_AVX2 __attribute__((target("avx2,fma,f16c")))
#endif

namespace servescope::compute::kquant_interleaved {
namespace {

using gguf::BlockQ4_K;
using gguf::BlockQ6_K;
using gguf::kQuantBlock;
using gguf::kSuperBlock;

constexpr int64_t kRows = kInterleavedRows;
constexpr int kBlocksPerSuper = kSuperBlock / kQuantBlock;  // 8 activation blocks

// --- GGML's blocks, element by element ---

// Q4_K's 6-bit scale and minimum of sub-block j (GGML's get_scale_min_k4) and their packing.
void q4k_scale_min(const BlockQ4_K& b, int j, uint8_t& scale, uint8_t& min) {
  const uint8_t* s = b.scales;
  if (j < 4) {
    scale = s[j] & 63;
    min = s[j + 4] & 63;
  } else {
    scale = static_cast<uint8_t>((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4));
    min = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}
void q4k_set_scale_min(BlockQ4_K& b, int j, uint8_t scale, uint8_t min) {
  uint8_t* s = b.scales;
  if (j < 4) {
    s[j] = static_cast<uint8_t>((s[j] & 0xC0) | scale);
    s[j + 4] = static_cast<uint8_t>((s[j + 4] & 0xC0) | min);
  } else {
    s[j + 4] = static_cast<uint8_t>((scale & 0x0F) | ((min & 0x0F) << 4));
    s[j - 4] = static_cast<uint8_t>((s[j - 4] & 0x3F) | ((scale >> 4) << 6));
    s[j] = static_cast<uint8_t>((s[j] & 0x3F) | ((min >> 4) << 6));
  }
}

// Q6_K's unsigned quants (0..63) in element order, and back: GGML keeps element
// 128 n + 32 quarter + l's low four bits in ql[64 n + l + 32 (quarter odd)] (the high nibble for
// quarters 2 and 3) and its top two in bits 2 quarter of qh[32 n + l].
void q6k_quants(const BlockQ6_K& b, uint8_t (&q)[kSuperBlock]) {
  for (int n = 0; n < 2; ++n) {
    for (int quarter = 0; quarter < 4; ++quarter) {
      for (int l = 0; l < 32; ++l) {
        const int low = b.ql[64 * n + l + 32 * (quarter % 2)] >> (quarter >= 2 ? 4 : 0);
        const int high = b.qh[32 * n + l] >> (2 * quarter);
        q[128 * n + 32 * quarter + l] = static_cast<uint8_t>((low & 0x0F) | ((high & 3) << 4));
      }
    }
  }
}
void set_q6k_quants(const uint8_t (&q)[kSuperBlock], BlockQ6_K& b) {
  for (int n = 0; n < 2; ++n) {
    for (int quarter = 0; quarter < 4; ++quarter) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t v = q[128 * n + 32 * quarter + l];
        b.ql[64 * n + l + 32 * (quarter % 2)] |=
            static_cast<uint8_t>((v & 0x0F) << (quarter >= 2 ? 4 : 0));
        b.qh[32 * n + l] |= static_cast<uint8_t>((v >> 4) << (2 * quarter));
      }
    }
  }
}

// --- Interleaving and back ---

void regroup(const BlockQ4_K& b, size_t lane, Q4KBlock& out) {
  out.d[lane] = b.d;
  out.dmin[lane] = b.dmin;
  for (int j = 0; j < 8; ++j) q4k_scale_min(b, j, out.scale[j][lane], out.min[j][lane]);
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 8; ++i) std::memcpy(out.qs[c][i][lane], b.qs + 32 * c + 4 * i, 4);
  }
}
BlockQ4_K restore(const Q4KBlock& in, size_t lane) {
  BlockQ4_K b{};
  b.d = in.d[lane];
  b.dmin = in.dmin[lane];
  for (int j = 0; j < 8; ++j) q4k_set_scale_min(b, j, in.scale[j][lane], in.min[j][lane]);
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 8; ++i) std::memcpy(b.qs + 32 * c + 4 * i, in.qs[c][i][lane], 4);
  }
  return b;
}

// Q6_K's quant e of activation block a, from the interleaved layout.
int q6k_quant(const Q6KBlock& in, size_t lane, int a, int e) {
  const int group = e / 4;
  const int k = e % 4;
  const uint8_t low = in.low[a][group % 4][lane][k];
  const uint8_t high = in.high[a][group / 4][lane][k];
  return ((group < 4 ? low : low >> 4) & 0x0F) | (((high >> (2 * (group % 4))) & 3) << 4);
}
void regroup(const BlockQ6_K& b, size_t lane, Q6KBlock& out) {
  out.d[lane] = b.d;
  for (int k = 0; k < 16; ++k) out.scale[k][lane] = b.scales[k];
  uint8_t q[kSuperBlock];
  q6k_quants(b, q);
  for (int a = 0; a < kBlocksPerSuper; ++a) {
    const uint8_t* qa = q + a * kQuantBlock;
    for (int k = 0; k < 4; ++k) {
      for (int e = 0; e < 4; ++e) {
        // Groups k and k + 4 share a low chunk; groups 4h .. 4h + 3 a high one.
        const uint8_t first = qa[4 * k + e];
        const uint8_t second = qa[16 + 4 * k + e];
        out.low[a][k][lane][e] = static_cast<uint8_t>((first & 0x0F) | ((second & 0x0F) << 4));
      }
    }
    for (int h = 0; h < 2; ++h) {
      for (int e = 0; e < 4; ++e) {
        uint8_t high = 0;
        for (int u = 0; u < 4; ++u)
          high |= static_cast<uint8_t>((qa[4 * (4 * h + u) + e] >> 4) << (2 * u));
        out.high[a][h][lane][e] = high;
      }
    }
  }
}
BlockQ6_K restore(const Q6KBlock& in, size_t lane) {
  BlockQ6_K b{};
  b.d = in.d[lane];
  for (int k = 0; k < 16; ++k) b.scales[k] = in.scale[k][lane];
  uint8_t q[kSuperBlock];
  for (int a = 0; a < kBlocksPerSuper; ++a) {
    for (int e = 0; e < kQuantBlock; ++e) {
      q[a * kQuantBlock + e] = static_cast<uint8_t>(q6k_quant(in, lane, a, e));
    }
  }
  set_q6k_quants(q, b);
  return b;
}

template <class Stored, class Packed>
std::vector<uint8_t> interleave_as(const uint8_t* data, int64_t rows, int64_t cols) {
  const int64_t supers = cols / kSuperBlock;
  const int64_t groups = (rows + kRows - 1) / kRows;
  std::vector<uint8_t> packed(static_cast<size_t>(groups * supers) * sizeof(Packed), 0);
  auto* out = reinterpret_cast<Packed*>(packed.data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t s = 0; s < supers; ++s) {
      Stored block;
      std::memcpy(&block, data + (r * supers + s) * static_cast<int64_t>(sizeof block),
                  sizeof block);
      regroup(block, static_cast<size_t>(r % kRows), out[(r / kRows) * supers + s]);
    }
  }
  return packed;
}

template <class Packed>
void row_as(gguf::GgmlType type, const uint8_t* packed, int64_t cols, int64_t row, float* dst) {
  const int64_t supers = cols / kSuperBlock;
  const auto* group = reinterpret_cast<const Packed*>(packed) + (row / kRows) * supers;
  for (int64_t s = 0; s < supers; ++s) {
    const auto block = restore(group[s], static_cast<size_t>(row % kRows));
    gguf::dequantize_row(type, reinterpret_cast<const uint8_t*>(&block), dst + s * kSuperBlock,
                         kSuperBlock);
  }
}

// --- The products ---

// The integer start of a Q6_K sub-block's dot: -32 x the sum of its 16 activations, from the
// block's offsets (each -8 x a sum of four).
int32_t q6k_half_start(const ActivationBlock& x, int half) {
  return 4 * (x.offset[4 * half] + x.offset[4 * half + 1] + x.offset[4 * half + 2] +
              x.offset[4 * half + 3]);
}

// Token t's d_x x (sum of its block's activations), the Q4_K minimums' factor.
float scaled_sum(const ActivationBlock& x, int32_t sum) { return x.d * static_cast<float>(sum); }

void q4k_portable(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,
                  const ActivationBlock* x, const int32_t* x_sums, int64_t tokens, float* out,
                  int64_t out_stride) {
  const int64_t supers = cols / kSuperBlock;
  const int64_t blocks = cols / kQuantBlock;
  const float* half_to_float = fp16_to_float_table();
  for (int64_t r = first_row; r < end_row; ++r) {
    const auto* group = reinterpret_cast<const Q4KBlock*>(packed) + (r / kRows) * supers;
    const auto lane = static_cast<size_t>(r % kRows);
    for (int64_t t = 0; t < tokens; ++t) {
      float sum = 0.0f;
      for (int64_t s = 0; s < supers; ++s) {
        const Q4KBlock& b = group[s];
        const float d = half_to_float[b.d[lane]];
        const float dmin = half_to_float[b.dmin[lane]];
        for (int j = 0; j < kBlocksPerSuper; ++j) {
          const int64_t at = t * blocks + s * kBlocksPerSuper + j;
          const ActivationBlock& xb = x[at];
          int32_t dot = 0;
          for (int e = 0; e < kQuantBlock; ++e) {
            const uint8_t byte = b.qs[j / 2][e / 4][lane][e % 4];
            dot += ((j % 2 == 0 ? byte : byte >> 4) & 0x0F) * xb.qs[e];
          }
          const float scale = d * static_cast<float>(b.scale[j][lane]);
          const float min = dmin * static_cast<float>(b.min[j][lane]);
          sum = std::fma(scale * xb.d, static_cast<float>(dot), sum);
          sum = std::fma(-min, scaled_sum(xb, x_sums[at]), sum);
        }
      }
      out[t * out_stride + r] = sum;
    }
  }
}

void q6k_portable(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,
                  const ActivationBlock* x, const int32_t* /*x_offsets*/, int64_t tokens,
                  float* out, int64_t out_stride) {
  const int64_t supers = cols / kSuperBlock;
  const int64_t blocks = cols / kQuantBlock;
  const float* half_to_float = fp16_to_float_table();
  for (int64_t r = first_row; r < end_row; ++r) {
    const auto* group = reinterpret_cast<const Q6KBlock*>(packed) + (r / kRows) * supers;
    const auto lane = static_cast<size_t>(r % kRows);
    for (int64_t t = 0; t < tokens; ++t) {
      float sum = 0.0f;
      for (int64_t s = 0; s < supers; ++s) {
        const Q6KBlock& b = group[s];
        const float d = half_to_float[b.d[lane]];
        for (int a = 0; a < kBlocksPerSuper; ++a) {
          const ActivationBlock& xb = x[t * blocks + s * kBlocksPerSuper + a];
          for (int half = 0; half < 2; ++half) {
            int32_t dot = q6k_half_start(xb, half);
            for (int e = 16 * half; e < 16 * half + 16; ++e)
              dot += q6k_quant(b, lane, a, e) * xb.qs[e];
            const float scale = d * static_cast<float>(b.scale[2 * a + half][lane]);
            sum = std::fma(scale * xb.d, static_cast<float>(dot), sum);
          }
        }
      }
      out[t * out_stride + r] = sum;
    }
  }
}

#ifdef SERVESCOPE_KQI_SIMD
// GCC 12's AVX-512 intrinsics start from _mm512_undefined values, which its uninitialised-use
// warnings flag inside the header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"


// 16 unsigned bytes as floats (a sub-block's scale or minimum of 16 rows), times `factor`.
SERVESCOPE_KQI_AVX512 inline __m512 scaled_bytes(const uint8_t* bytes, __m512 factor) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes));
  return _mm512_mul_ps(factor, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b)));
}
SERVESCOPE_KQI_AVX512 inline __m512 scaled_bytes(const int8_t* bytes, __m512 factor) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes));
  return _mm512_mul_ps(factor, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b)));
}

SERVESCOPE_KQI_AVX512 inline __m512 half_floats(const uint16_t* halves) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(halves)));
}

// 16 rows (the first `valid` stored) against T tokens; token t's blocks at x + t * blocks.
template <int T>
SERVESCOPE_KQI_AVX512 void q4k_group(const Q4KBlock* group, int64_t supers,
                                     const ActivationBlock* x, const int32_t* x_sums, float* out,
                                     int64_t out_stride, __mmask16 valid) {
  const int64_t blocks = supers * kBlocksPerSuper;
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t s = 0; s < supers; ++s) {
    const Q4KBlock& b = group[s];
    const __m512 d = half_floats(b.d);
    const __m512 dmin = half_floats(b.dmin);
    for (int j = 0; j < kBlocksPerSuper; ++j) {
      const __m512 scale = scaled_bytes(b.scale[j], d);
      const __m512 min = scaled_bytes(b.min[j], dmin);
      __m512i w[8];
      for (int i = 0; i < 8; ++i) {
        const __m512i chunk = _mm512_loadu_si512(b.qs[j / 2][i]);
        w[i] = _mm512_and_si512(j % 2 == 0 ? chunk : _mm512_srli_epi16(chunk, 4), nibble);
      }
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const int64_t at = t * blocks + s * kBlocksPerSuper + j;
        const ActivationBlock& xb = x[at];
        // Two chains of four dots: integer sums, so splitting them changes nothing.
        __m512i even = _mm512_setzero_si512();
        __m512i odd = _mm512_setzero_si512();
        for (int i = 0; i < 8; i += 2) {
          even = _mm512_dpbusd_epi32(even, w[i], activations_of_group_512(xb, i));
          odd = _mm512_dpbusd_epi32(odd, w[i + 1], activations_of_group_512(xb, i + 1));
        }
        const __m512 dot = _mm512_cvtepi32_ps(_mm512_add_epi32(even, odd));
        acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(scale, _mm512_set1_ps(xb.d)), dot, acc[t]);
        acc[t] = _mm512_fnmadd_ps(min, _mm512_set1_ps(scaled_sum(xb, x_sums[at])), acc[t]);
      }
    }
  }
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * out_stride, valid, acc[t]);
}

// Group i's six-bit quants of activation block a for 16 rows, as unsigned bytes.
SERVESCOPE_KQI_AVX512 inline __m512i q6k_operand(const Q6KBlock& b, int a, int i) {
  const __m512i low_chunk = _mm512_loadu_si512(b.low[a][i % 4]);
  const __m512i low =
      _mm512_and_si512(i < 4 ? low_chunk : _mm512_srli_epi16(low_chunk, 4), _mm512_set1_epi8(0x0F));
  // Bits 2u, 2u + 1 of each byte to bits 4, 5; a 16-bit shift's carry between the bytes lands
  // outside them.
  const __m512i high_chunk = _mm512_loadu_si512(b.high[a][i / 4]);
  const int u = i % 4;
  const __m512i moved = u == 0   ? _mm512_slli_epi16(high_chunk, 4)
                        : u == 1 ? _mm512_slli_epi16(high_chunk, 2)
                        : u == 2 ? high_chunk
                                 : _mm512_srli_epi16(high_chunk, 2);
  return _mm512_or_si512(low, _mm512_and_si512(moved, _mm512_set1_epi8(0x30)));
}

template <int T>
SERVESCOPE_KQI_AVX512 void q6k_group(const Q6KBlock* group, int64_t supers,
                                     const ActivationBlock* x, const int32_t* /*x_offsets*/,
                                     float* out, int64_t out_stride, __mmask16 valid) {
  const int64_t blocks = supers * kBlocksPerSuper;
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t s = 0; s < supers; ++s) {
    const Q6KBlock& b = group[s];
    const __m512 d = half_floats(b.d);
    for (int a = 0; a < kBlocksPerSuper; ++a) {
      const __m512 first_scale = scaled_bytes(b.scale[2 * a], d);
      const __m512 second_scale = scaled_bytes(b.scale[2 * a + 1], d);
      __m512i w[8];
      for (int i = 0; i < 8; ++i) w[i] = q6k_operand(b, a, i);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const ActivationBlock& xb = x[t * blocks + s * kBlocksPerSuper + a];
        __m512i first = _mm512_set1_epi32(q6k_half_start(xb, 0));
        __m512i second = _mm512_set1_epi32(q6k_half_start(xb, 1));
        for (int i = 0; i < 4; ++i) {
          first = _mm512_dpbusd_epi32(first, w[i], activations_of_group_512(xb, i));
          second = _mm512_dpbusd_epi32(second, w[i + 4], activations_of_group_512(xb, i + 4));
        }
        const __m512 dx = _mm512_set1_ps(xb.d);
        acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(first_scale, dx), _mm512_cvtepi32_ps(first), acc[t]);
        acc[t] =
            _mm512_fmadd_ps(_mm512_mul_ps(second_scale, dx), _mm512_cvtepi32_ps(second), acc[t]);
      }
    }
  }
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * out_stride, valid, acc[t]);
}

// Eight tokens at a time keep 8 sums and a sub-block's 8 operand registers in 32 registers.
constexpr int kTokensAtOnce = 8;

template <class Packed>
using Group = void (*)(const Packed*, int64_t, const ActivationBlock*, const int32_t*, float*,
                       int64_t, __mmask16);

template <class Packed, template <int> class G>
struct Groups {
  static constexpr Group<Packed> at[kTokensAtOnce + 1] = {
      nullptr, G<1>::f, G<2>::f, G<3>::f, G<4>::f, G<5>::f, G<6>::f, G<7>::f, G<8>::f};
};
template <int T>
struct Q4KGroup {
  static constexpr auto f = q4k_group<T>;
};
template <int T>
struct Q6KGroup {
  static constexpr auto f = q6k_group<T>;
};

template <class Packed, template <int> class G>
void product_avx512(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,
                    const ActivationBlock* x, const int32_t* x_offsets, int64_t tokens, float* out,
                    int64_t out_stride) {
  const int64_t supers = cols / kSuperBlock;
  const int64_t blocks = cols / kQuantBlock;
  for (int64_t r = first_row; r < end_row; r += kRows) {
    const auto* group = reinterpret_cast<const Packed*>(packed) + (r / kRows) * supers;
    const auto valid = static_cast<__mmask16>((1u << std::min(kRows, end_row - r)) - 1);
    for (int64_t t = 0; t < tokens; t += kTokensAtOnce) {
      const int64_t count = std::min<int64_t>(kTokensAtOnce, tokens - t);
      Groups<Packed, G>::at[count](group, supers, x + t * blocks, x_offsets + t * blocks,
                                   out + t * out_stride + r, out_stride, valid);
    }
  }
}

// --- AVX2: the same steps on 8 rows at a time (a group's two halves in turn) ---

// Four unsigned x signed byte products summed in 32-bit lanes, added to sum; pairs of products
// fit 16 bits here (at most 2 x 63 x 127).
SERVESCOPE_KQI_AVX2 inline __m256i add_dots(__m256i sum, __m256i w, __m256i s) {
  return _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(w, s), _mm256_set1_epi16(1)));
}
SERVESCOPE_KQI_AVX2 inline __m256i load_half(const uint8_t (&rows)[kRows][4], int half) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[8 * half]));
}
// 8 bytes as floats times `factor` (rows 8 half .. 8 half + 7 of a sub-block's scales).
SERVESCOPE_KQI_AVX2 inline __m256 scaled_bytes_avx2(const uint8_t* bytes, __m256 factor) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes));
  return _mm256_mul_ps(factor, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b)));
}
SERVESCOPE_KQI_AVX2 inline __m256 scaled_bytes_avx2(const int8_t* bytes, __m256 factor) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes));
  return _mm256_mul_ps(factor, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)));
}
SERVESCOPE_KQI_AVX2 inline __m256 half_floats_avx2(const uint16_t* halves) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(halves)));
}
// Stores the first `valid` of 8 sums.
SERVESCOPE_KQI_AVX2 inline void store_rows(float* out, __m256 sums, int64_t valid) {
  if (valid >= 8) {
    _mm256_storeu_ps(out, sums);
    return;
  }
  float all[8];
  _mm256_storeu_ps(all, sums);
  std::copy(all, all + valid, out);
}

template <int T>
SERVESCOPE_KQI_AVX2 void q4k_half_group(const Q4KBlock* group, int64_t supers, int half,
                                        const ActivationBlock* x, const int32_t* x_sums, float* out,
                                        int64_t out_stride, int64_t valid) {
  const int64_t blocks = supers * kBlocksPerSuper;
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t s = 0; s < supers; ++s) {
    const Q4KBlock& b = group[s];
    const __m256 d = half_floats_avx2(b.d + 8 * half);
    const __m256 dmin = half_floats_avx2(b.dmin + 8 * half);
    for (int j = 0; j < kBlocksPerSuper; ++j) {
      const __m256 scale = scaled_bytes_avx2(b.scale[j] + 8 * half, d);
      const __m256 min = scaled_bytes_avx2(b.min[j] + 8 * half, dmin);
      __m256i w[8];
      for (int i = 0; i < 8; ++i) {
        const __m256i chunk = load_half(b.qs[j / 2][i], half);
        w[i] = _mm256_and_si256(j % 2 == 0 ? chunk : _mm256_srli_epi16(chunk, 4), nibble);
      }
      for (int t = 0; t < T; ++t) {
        const int64_t at = t * blocks + s * kBlocksPerSuper + j;
        const ActivationBlock& xb = x[at];
        __m256i even = _mm256_setzero_si256();
        __m256i odd = _mm256_setzero_si256();
        for (int i = 0; i < 8; i += 2) {
          even = add_dots(even, w[i], activations_of_group_256(xb, i));
          odd = add_dots(odd, w[i + 1], activations_of_group_256(xb, i + 1));
        }
        const __m256 dot = _mm256_cvtepi32_ps(_mm256_add_epi32(even, odd));
        acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(scale, _mm256_set1_ps(xb.d)), dot, acc[t]);
        acc[t] = _mm256_fnmadd_ps(min, _mm256_set1_ps(scaled_sum(xb, x_sums[at])), acc[t]);
      }
    }
  }
  for (int t = 0; t < T; ++t) store_rows(out + t * out_stride, acc[t], valid);
}

SERVESCOPE_KQI_AVX2 inline __m256i q6k_operand_avx2(const Q6KBlock& b, int a, int i, int half) {
  const __m256i low_chunk = load_half(b.low[a][i % 4], half);
  const __m256i low =
      _mm256_and_si256(i < 4 ? low_chunk : _mm256_srli_epi16(low_chunk, 4), _mm256_set1_epi8(0x0F));
  const __m256i high_chunk = load_half(b.high[a][i / 4], half);
  const int u = i % 4;
  const __m256i moved = u == 0   ? _mm256_slli_epi16(high_chunk, 4)
                        : u == 1 ? _mm256_slli_epi16(high_chunk, 2)
                        : u == 2 ? high_chunk
                                 : _mm256_srli_epi16(high_chunk, 2);
  return _mm256_or_si256(low, _mm256_and_si256(moved, _mm256_set1_epi8(0x30)));
}

template <int T>
SERVESCOPE_KQI_AVX2 void q6k_half_group(const Q6KBlock* group, int64_t supers, int half,
                                        const ActivationBlock* x, const int32_t* /*x_offsets*/,
                                        float* out, int64_t out_stride, int64_t valid) {
  const int64_t blocks = supers * kBlocksPerSuper;
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t s = 0; s < supers; ++s) {
    const Q6KBlock& b = group[s];
    const __m256 d = half_floats_avx2(b.d + 8 * half);
    for (int a = 0; a < kBlocksPerSuper; ++a) {
      const __m256 first_scale = scaled_bytes_avx2(b.scale[2 * a] + 8 * half, d);
      const __m256 second_scale = scaled_bytes_avx2(b.scale[2 * a + 1] + 8 * half, d);
      __m256i w[8];
      for (int i = 0; i < 8; ++i) w[i] = q6k_operand_avx2(b, a, i, half);
      for (int t = 0; t < T; ++t) {
        const ActivationBlock& xb = x[t * blocks + s * kBlocksPerSuper + a];
        __m256i first = _mm256_set1_epi32(q6k_half_start(xb, 0));
        __m256i second = _mm256_set1_epi32(q6k_half_start(xb, 1));
        for (int i = 0; i < 4; ++i) {
          first = add_dots(first, w[i], activations_of_group_256(xb, i));
          second = add_dots(second, w[i + 4], activations_of_group_256(xb, i + 4));
        }
        const __m256 dx = _mm256_set1_ps(xb.d);
        acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(first_scale, dx), _mm256_cvtepi32_ps(first), acc[t]);
        acc[t] =
            _mm256_fmadd_ps(_mm256_mul_ps(second_scale, dx), _mm256_cvtepi32_ps(second), acc[t]);
      }
    }
  }
  for (int t = 0; t < T; ++t) store_rows(out + t * out_stride, acc[t], valid);
}

// Two tokens at a time: 8 operand registers and 2 sums, with the dots' temporaries, in 16.
constexpr int kAvx2Tokens = 2;

template <class Packed,
          void (*Pair)(const Packed*, int64_t, int, const ActivationBlock*, const int32_t*, float*,
                       int64_t, int64_t),
          void (*Single)(const Packed*, int64_t, int, const ActivationBlock*, const int32_t*,
                         float*, int64_t, int64_t)>
void product_avx2(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,
                  const ActivationBlock* x, const int32_t* x_offsets, int64_t tokens, float* out,
                  int64_t out_stride) {
  const int64_t supers = cols / kSuperBlock;
  const int64_t blocks = cols / kQuantBlock;
  for (int64_t r = first_row; r < end_row; r += kRows / 2) {
    const auto* group = reinterpret_cast<const Packed*>(packed) + (r / kRows) * supers;
    const auto half = static_cast<int>((r % kRows) / 8);
    const int64_t valid = std::min<int64_t>(8, end_row - r);
    int64_t t = 0;
    for (; t + kAvx2Tokens <= tokens; t += kAvx2Tokens) {
      Pair(group, supers, half, x + t * blocks, x_offsets + t * blocks, out + t * out_stride + r,
           out_stride, valid);
    }
    if (t < tokens) {
      Single(group, supers, half, x + t * blocks, x_offsets + t * blocks, out + t * out_stride + r,
             out_stride, valid);
    }
  }
}
#pragma GCC diagnostic pop
#endif

bool is_q4k(gguf::GgmlType type) {
  if (!handles(type)) std::abort();  // callers check handles()
  return type == gguf::GgmlType::Q4_K;
}

}  // namespace

bool handles(gguf::GgmlType type) {
  return type == gguf::GgmlType::Q4_K || type == gguf::GgmlType::Q6_K;
}

std::vector<uint8_t> interleave(gguf::GgmlType type, const uint8_t* data, int64_t rows,
                                int64_t cols) {
  return is_q4k(type) ? interleave_as<BlockQ4_K, Q4KBlock>(data, rows, cols)
                      : interleave_as<BlockQ6_K, Q6KBlock>(data, rows, cols);
}

void row(gguf::GgmlType type, const uint8_t* packed, int64_t cols, int64_t row, float* dst) {
  if (is_q4k(type)) {
    row_as<Q4KBlock>(type, packed, cols, row, dst);
  } else {
    row_as<Q6KBlock>(type, packed, cols, row, dst);
  }
}

int32_t block_offset(gguf::GgmlType type, const ActivationBlock& x) {
  // Q4_K: the sum of the block's activations (offset[] holds -8 x each sum of four); Q6_K's
  // kernels take their two halves' sums from the block itself.
  if (!is_q4k(type)) return 0;
  return -std::accumulate(std::begin(x.offset), std::end(x.offset), 0) / 8;
}

std::vector<InterleavedKernel> variants(gguf::GgmlType type) {
  const bool q4k = is_q4k(type);
  std::vector<InterleavedKernel> kernels = {q4k ? q4k_portable : q6k_portable};
#ifdef SERVESCOPE_KQI_SIMD
  if (cpu_has_avx2()) {
    kernels.push_back(q4k ? product_avx2<Q4KBlock, q4k_half_group<2>, q4k_half_group<1>>
                          : product_avx2<Q6KBlock, q6k_half_group<2>, q6k_half_group<1>>);
  }
  if (cpu_has_avx512_vnni()) {
    kernels.push_back(q4k ? product_avx512<Q4KBlock, Q4KGroup>
                          : product_avx512<Q6KBlock, Q6KGroup>);
  }
#endif
  return kernels;
}

}  // namespace servescope::compute::kquant_interleaved
