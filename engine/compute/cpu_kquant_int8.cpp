// Q4_K weights against 8-bit activations (`--activations q8_0`): per sub-block of 32, one
// integer dot of the stored nibbles (unsigned) with the token's quantised block (signed), as
// llama.cpp multiplies Q4_K rows. With a weight w = d1 * q - m1 and an activation x = dx * s:
//   sum w x = (d1 * dx) * sum q s  -  m1 * (dx * sum s),
// the second factor a property of the token alone (computed once per product). Every variant
// keeps the same eight lanes (lane k: the integer sum of elements 4k .. 4k + 3 of each
// sub-block, even and odd sub-blocks apart) and the same float steps, so all give the same bits.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "engine/compute/cpu_features.h"
#include "engine/compute/cpu_kquant_dot.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SERVESCOPE_KQ8_SIMD 1
#endif

// GCC 12's AVX-512 intrinsics start from _mm512_undefined values, which its uninitialised-use
// warnings flag inside the header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace servescope::compute {
namespace {

using gguf::BlockQ4_K;
constexpr int64_t kSuper = gguf::kSuperBlock;
constexpr int kSubBlocks = 8;
constexpr int64_t kTokensPerPass = 32;

// Per token and activation block: dx, and dx * (sum of its 32 quantised values).
struct TokenTerms {
  std::vector<float> scale;
  std::vector<float> scaled_sum;
  std::vector<int8_t> qs;  // each token's quantised values back to back (aligned loads)
};

void token_terms(const ActivationBlock* x, int64_t x_stride, int64_t tokens, int64_t n,
                 TokenTerms& terms) {
  const int64_t blocks = n / gguf::kQuantBlock;
  terms.scale.resize(static_cast<size_t>(tokens * blocks));
  terms.scaled_sum.resize(static_cast<size_t>(tokens * blocks));
  terms.qs.resize(static_cast<size_t>(tokens * n));
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t b = 0; b < blocks; ++b) {
      const ActivationBlock& block = x[t * x_stride + b];
      std::memcpy(terms.qs.data() + (t * blocks + b) * gguf::kQuantBlock, block.qs,
                  gguf::kQuantBlock);
      int sum = 0;
      for (const int8_t q : block.qs) sum += q;
      terms.scale[static_cast<size_t>(t * blocks + b)] = block.d;
      terms.scaled_sum[static_cast<size_t>(t * blocks + b)] = block.d * static_cast<float>(sum);
    }
  }
}

// The eight 6-bit scales and minimums of a Q4_K super-block, as gguf::dequantize_row takes them.
void scales_mins_portable(const uint8_t* block, float (&scale)[kSubBlocks],
                          float (&min)[kSubBlocks]) {
  uint16_t h = 0;
  std::memcpy(&h, block + offsetof(BlockQ4_K, d), sizeof h);
  const float d = gguf::fp16_to_fp32(h);
  std::memcpy(&h, block + offsetof(BlockQ4_K, dmin), sizeof h);
  const float dmin = gguf::fp16_to_fp32(h);
  const uint8_t* packed = block + offsetof(BlockQ4_K, scales);
  for (int j = 0; j < kSubBlocks; ++j) {
    const int sc = j < 4 ? packed[j] & 63 : (packed[j + 4] & 0x0F) | ((packed[j - 4] >> 6) << 4);
    const int mn = j < 4 ? packed[j + 4] & 63 : (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
    scale[j] = d * static_cast<float>(sc);
    min[j] = dmin * static_cast<float>(mn);
  }
}

// The final fold of eight lanes, as the vector code's sum8 takes it.
float sum8_portable(const float (&v)[8]) {
  float four[4];
  for (int i = 0; i < 4; ++i) four[i] = v[i] + v[i + 4];
  const float two[2] = {four[0] + four[2], four[1] + four[3]};
  return two[0] + two[1];
}

void dot_portable(const uint8_t* rows, uint64_t row_stride, int64_t n_rows,
                  const ActivationBlock* x, int64_t x_stride, int64_t tokens, int64_t n, float* out,
                  int64_t out_stride) {
  TokenTerms terms;
  token_terms(x, x_stride, tokens, n, terms);
  const int64_t blocks32 = n / gguf::kQuantBlock;
  for (int64_t r = 0; r < n_rows; ++r) {
    const uint8_t* row = rows + static_cast<uint64_t>(r) * row_stride;
    for (int64_t t = 0; t < tokens; ++t) {
      float even[8] = {};
      float odd[8] = {};
      float mins[8] = {};
      for (int64_t b = 0; b < n / kSuper; ++b) {
        const uint8_t* block = row + b * static_cast<int64_t>(sizeof(BlockQ4_K));
        float scale[kSubBlocks];
        float min[kSubBlocks];
        scales_mins_portable(block, scale, min);
        const float* dx = terms.scale.data() + t * blocks32 + b * kSubBlocks;
        const float* sx = terms.scaled_sum.data() + t * blocks32 + b * kSubBlocks;
        for (int j = 0; j < kSubBlocks; ++j) mins[j] = std::fma(min[j], sx[j], mins[j]);
        const uint8_t* qs = block + offsetof(BlockQ4_K, qs);
        for (int j = 0; j < kSubBlocks; ++j) {
          const float combined = scale[j] * dx[j];
          const int8_t* s = x[t * x_stride + b * kSubBlocks + j].qs;
          float* lanes = j % 2 == 0 ? even : odd;
          for (int k = 0; k < 8; ++k) {
            int sum = 0;
            for (int i = 4 * k; i < 4 * k + 4; ++i) {
              const uint8_t byte = qs[32 * (j / 2) + i];
              sum += (j % 2 == 0 ? byte & 0x0F : byte >> 4) * s[i];
            }
            lanes[k] = std::fma(static_cast<float>(sum), combined, lanes[k]);
          }
        }
      }
      float both[8];
      for (int k = 0; k < 8; ++k) both[k] = even[k] + odd[k];
      out[t * out_stride + r] = sum8_portable(both) - sum8_portable(mins);
    }
  }
}

#ifdef SERVESCOPE_KQ8_SIMD
#define SERVESCOPE_KQ8_AVX2 __attribute__((target("avx2,fma,f16c")))
#define SERVESCOPE_KQ8_VNNI __attribute__((target("avxvnni,avx2,fma,f16c")))
#define KQ8_INLINE inline __attribute__((always_inline))

KQ8_INLINE SERVESCOPE_KQ8_AVX2 float sum8(__m256 v) {
  const __m128 four = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 two = _mm_add_ps(four, _mm_movehl_ps(four, four));
  return _mm_cvtss_f32(_mm_add_ss(two, _mm_shuffle_ps(two, two, 1)));
}

// token_terms with vector ops: sum of a block's quants as the sum of (q + 128) by vpsadbw, less
// 32 x 128 (the same integers, so the same terms).
SERVESCOPE_KQ8_AVX2 void token_terms_avx2(const ActivationBlock* x, int64_t x_stride,
                                          int64_t tokens, int64_t n, TokenTerms& terms) {
  const int64_t blocks = n / gguf::kQuantBlock;
  terms.scale.resize(static_cast<size_t>(tokens * blocks));
  terms.scaled_sum.resize(static_cast<size_t>(tokens * blocks));
  terms.qs.resize(static_cast<size_t>(tokens * n));
  const __m256i bias = _mm256_set1_epi8(-128);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t b = 0; b < blocks; ++b) {
      const ActivationBlock& block = x[t * x_stride + b];
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qs));
      _mm256_storeu_si256(
          reinterpret_cast<__m256i*>(terms.qs.data() + (t * blocks + b) * gguf::kQuantBlock), q);
      const __m256i sums = _mm256_sad_epu8(_mm256_xor_si256(q, bias), _mm256_setzero_si256());
      const __m128i two =
          _mm_add_epi64(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
      const int64_t sum =
          _mm_cvtsi128_si64(_mm_add_epi64(two, _mm_unpackhi_epi64(two, two))) - 32 * 128;
      const auto at = static_cast<size_t>(t * blocks + b);
      terms.scale[at] = block.d;
      terms.scaled_sum[at] = block.d * static_cast<float>(sum);
    }
  }
}

// Eight lanes of sums of four unsigned x signed byte products. AVX2's pair products cannot
// saturate here (15 * 127 * 2 < 32767).
struct MaddubsDot {
  KQ8_INLINE SERVESCOPE_KQ8_AVX2 static __m256i dot(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
  }
};
struct VnniDot {
  KQ8_INLINE SERVESCOPE_KQ8_VNNI static __m256i dot(__m256i u, __m256i s) {
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, s);
  }
};

// The eight scales and minimums with vector ops (the packing rearranged on 32-bit words).
KQ8_INLINE SERVESCOPE_KQ8_AVX2 void scales_mins(const uint8_t* block, __m256& scale, __m256& min) {
  constexpr uint32_t kLow6 = 0x3F3F3F3F;
  constexpr uint32_t kLow4 = 0x0F0F0F0F;
  constexpr uint32_t kLow2 = 0x03030303;
  uint32_t u[4] = {};
  std::memcpy(u, block + offsetof(BlockQ4_K, scales), gguf::kKScaleBytes);
  u[3] = ((u[2] >> 4) & kLow4) | (((u[1] >> 6) & kLow2) << 4);
  const uint32_t first_mins = u[1] & kLow6;
  u[1] = (u[2] & kLow4) | (((u[0] >> 6) & kLow2) << 4);
  u[2] = first_mins;
  u[0] &= kLow6;
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(u));
  uint16_t h = 0;
  std::memcpy(&h, block + offsetof(BlockQ4_K, d), sizeof h);
  const float d = _cvtsh_ss(h);
  std::memcpy(&h, block + offsetof(BlockQ4_K, dmin), sizeof h);
  const float dmin = _cvtsh_ss(h);
  scale = _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)));
  min = _mm256_mul_ps(_mm256_set1_ps(dmin),
                      _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8))));
}

// Rows x tokens, defined once per instruction set (a function may not inline code compiled for
// more features than its own), hence the macro.
#define SERVESCOPE_DEFINE_KQ8_DOT(NAME, TARGET, DOT)                                            \
  TARGET void NAME(const uint8_t* rows, uint64_t row_stride, int64_t n_rows,                    \
                   const ActivationBlock* x, int64_t x_stride, int64_t tokens, int64_t n,       \
                   float* out, int64_t out_stride) {                                            \
    thread_local TokenTerms terms;                                                              \
    token_terms_avx2(x, x_stride, tokens, n, terms);                                            \
    const int64_t blocks32 = n / gguf::kQuantBlock;                                             \
    const __m256i nibble = _mm256_set1_epi8(0x0F);                                              \
    struct alignas(32) Lanes {                                                                  \
      __m256 even, odd, mins;                                                                   \
    };                                                                                          \
    Lanes lanes[kTokensPerPass];                                                                \
    for (int64_t r = 0; r < n_rows; ++r) {                                                      \
      const uint8_t* row = rows + static_cast<uint64_t>(r) * row_stride;                        \
      for (int64_t t0 = 0; t0 < tokens; t0 += kTokensPerPass) {                                 \
        const int64_t count = std::min(kTokensPerPass, tokens - t0);                            \
        for (int64_t t = 0; t < count; ++t) {                                                   \
          lanes[t].even = lanes[t].odd = lanes[t].mins = _mm256_setzero_ps();                   \
        }                                                                                       \
        for (int64_t b = 0; b < n / kSuper; ++b) {                                              \
          const uint8_t* block = row + b * static_cast<int64_t>(sizeof(BlockQ4_K));             \
          __m256 scale;                                                                         \
          __m256 min;                                                                           \
          scales_mins(block, scale, min);                                                       \
          __m256i q[kSubBlocks];                                                                \
          for (int c = 0; c < 4; ++c) {                                                         \
            const __m256i packed = _mm256_loadu_si256(                                          \
                reinterpret_cast<const __m256i*>(block + offsetof(BlockQ4_K, qs) + 32 * c));    \
            q[2 * c] = _mm256_and_si256(packed, nibble);                                        \
            q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(packed, 4), nibble);              \
          }                                                                                     \
          for (int64_t t = 0; t < count; ++t) {                                                 \
            const int64_t at = (t0 + t) * blocks32 + b * kSubBlocks;                            \
            alignas(32) float combined[kSubBlocks];                                             \
            _mm256_store_ps(combined,                                                           \
                            _mm256_mul_ps(scale, _mm256_loadu_ps(terms.scale.data() + at)));    \
            lanes[t].mins = _mm256_fmadd_ps(min, _mm256_loadu_ps(terms.scaled_sum.data() + at), \
                                            lanes[t].mins);                                     \
            const ActivationBlock* xb = x + (t0 + t) * x_stride + b * kSubBlocks;               \
            for (int j = 0; j < kSubBlocks; ++j) {                                              \
              const __m256i s = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[j].qs)); \
              const __m256 sums = _mm256_cvtepi32_ps(DOT::dot(q[j], s));                        \
              __m256& acc = j % 2 == 0 ? lanes[t].even : lanes[t].odd;                          \
              acc = _mm256_fmadd_ps(sums, _mm256_broadcast_ss(combined + j), acc);              \
            }                                                                                   \
          }                                                                                     \
        }                                                                                       \
        for (int64_t t = 0; t < count; ++t) {                                                   \
          out[(t0 + t) * out_stride + r] =                                                      \
              sum8(_mm256_add_ps(lanes[t].even, lanes[t].odd)) - sum8(lanes[t].mins);           \
        }                                                                                       \
      }                                                                                         \
    }                                                                                           \
  }

SERVESCOPE_DEFINE_KQ8_DOT(dot_avx2, SERVESCOPE_KQ8_AVX2, MaddubsDot)
SERVESCOPE_DEFINE_KQ8_DOT(dot_vnni, SERVESCOPE_KQ8_VNNI, VnniDot)

// AVX-512 VNNI: a register holds an even and an odd sub-block (lanes 0-7 and 8-15), exactly the
// AVX2 kernels' two accumulators side by side, so one instruction does the work of two and the
// bits stay the same.
#define SERVESCOPE_KQ8_AVX512 __attribute__((target("avx512f,avx512bw,avx512vnni,avx2,fma,f16c")))
// A row's super-blocks as the AVX-512 kernel reads them: nibbles unpacked, scales converted.
struct alignas(64) UnpackedBlock {
  __m512i q[4];  // chunk c: sub-block 2c's quants in bytes 0-31, 2c + 1's in 32-63
  __m256 scale;
  __m256 min;
};
constexpr int64_t kUnpackedBlocks = 16;  // 4096 elements, 6 KiB

// T tokens against `blocks` unpacked super-blocks starting at super-block b0; their lanes in
// pair/mins (continued from earlier chunks of the row).
template <int T>
SERVESCOPE_KQ8_AVX512 inline void tokens_against_blocks(const UnpackedBlock* w, int64_t blocks,
                                                        int64_t b0, const TokenTerms& terms,
                                                        const int64_t (&token)[T], int64_t blocks32,
                                                        __m512 (&pair)[T], __m256 (&mins)[T]) {
  for (int64_t b = 0; b < blocks; ++b) {
    const UnpackedBlock& u = w[b];
    for (int t = 0; t < T; ++t) {
      const int64_t at = token[t] * blocks32 + (b0 + b) * kSubBlocks;
      const __m512 combined =
          _mm512_castps256_ps512(_mm256_mul_ps(u.scale, _mm256_loadu_ps(terms.scale.data() + at)));
      mins[t] = _mm256_fmadd_ps(u.min, _mm256_loadu_ps(terms.scaled_sum.data() + at), mins[t]);
      const int8_t* xq = terms.qs.data() + at * gguf::kQuantBlock;
      for (int c = 0; c < 4; ++c) {
        const __m512 sums = _mm512_cvtepi32_ps(
            _mm512_dpbusd_epi32(_mm512_setzero_si512(), u.q[c], _mm512_loadu_si512(xq + 64 * c)));
        // Lanes 0-7: sub-block 2c's combined scale, lanes 8-15: sub-block 2c + 1's.
        const __m512i pick =
            _mm512_inserti64x4(_mm512_set1_epi32(2 * c), _mm256_set1_epi32(2 * c + 1), 1);
        pair[t] = _mm512_fmadd_ps(sums, _mm512_permutexvar_ps(pick, combined), pair[t]);
      }
    }
  }
}

// Some of a row's super-blocks, unpacked, and whether they start or end the row.
struct Chunk {
  const UnpackedBlock* blocks;
  int64_t count;
  int64_t first_block;
  bool first;
  bool last;
};

// Tokens t0 .. t0 + T - 1 against a chunk: their lanes start at zero (or from `lanes`), and end
// in out (or back in `lanes` for the next chunk).
template <int T>
SERVESCOPE_KQ8_AVX512 void tokens_step(const Chunk& chunk, const TokenTerms& terms, int64_t t0,
                                       int64_t blocks32, float* lanes, float* out,
                                       int64_t out_stride) {
  int64_t token[T];
  __m512 pair[T];
  __m256 mins[T];
  for (int t = 0; t < T; ++t) {
    token[t] = t0 + t;
    const float* l = lanes + (t0 + t) * 24;
    pair[t] = chunk.first ? _mm512_setzero_ps() : _mm512_loadu_ps(l);
    mins[t] = chunk.first ? _mm256_setzero_ps() : _mm256_loadu_ps(l + 16);
  }
  tokens_against_blocks<T>(chunk.blocks, chunk.count, chunk.first_block, terms, token, blocks32,
                           pair, mins);
  for (int t = 0; t < T; ++t) {
    if (chunk.last) {
      const __m256 even = _mm512_castps512_ps256(pair[t]);
      const __m256 odd = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(pair[t]), 1));
      out[(t0 + t) * out_stride] = sum8(_mm256_add_ps(even, odd)) - sum8(mins[t]);
    } else {
      float* l = lanes + (t0 + t) * 24;
      _mm512_storeu_ps(l, pair[t]);
      _mm256_storeu_ps(l + 16, mins[t]);
    }
  }
}

SERVESCOPE_KQ8_AVX512 void dot_avx512(const uint8_t* rows, uint64_t row_stride, int64_t n_rows,
                                      const ActivationBlock* x, int64_t x_stride, int64_t tokens,
                                      int64_t n, float* out, int64_t out_stride) {
  thread_local TokenTerms terms;
  token_terms_avx2(x, x_stride, tokens, n, terms);
  const int64_t blocks32 = n / gguf::kQuantBlock;
  const int64_t super_blocks = n / kSuper;
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  // Shift the low 32 bytes by 0 and the high 32 by 4: low nibbles, then high nibbles.
  const __m512i halves_shift = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
  UnpackedBlock unpacked[kUnpackedBlocks];
  thread_local std::vector<float> lanes;  // per token: 16 pair lanes, 8 mins lanes
  lanes.resize(static_cast<size_t>(tokens * 24));
  for (int64_t r = 0; r < n_rows; ++r) {
    const uint8_t* row = rows + static_cast<uint64_t>(r) * row_stride;
    for (int64_t b0 = 0; b0 < super_blocks; b0 += kUnpackedBlocks) {
      const int64_t blocks = std::min(kUnpackedBlocks, super_blocks - b0);
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* block = row + (b0 + b) * static_cast<int64_t>(sizeof(BlockQ4_K));
        scales_mins(block, unpacked[b].scale, unpacked[b].min);
        for (int c = 0; c < 4; ++c) {
          const __m512i packed = _mm512_broadcast_i64x4(_mm256_loadu_si256(
              reinterpret_cast<const __m256i*>(block + offsetof(BlockQ4_K, qs) + 32 * c)));
          unpacked[b].q[c] = _mm512_and_si512(_mm512_srlv_epi16(packed, halves_shift), nibble);
        }
      }
      const Chunk chunk{unpacked, blocks, b0, b0 == 0, b0 + blocks == super_blocks};
      int64_t t = 0;
      for (; t + 2 <= tokens; t += 2) {
        tokens_step<2>(chunk, terms, t, blocks32, lanes.data(), out + r, out_stride);
      }
      if (t < tokens) tokens_step<1>(chunk, terms, t, blocks32, lanes.data(), out + r, out_stride);
    }
  }
}
#endif

}  // namespace

std::vector<RowDotInt8Tokens> kquant_int8_kernel_variants(gguf::GgmlType type) {
  if (type != gguf::GgmlType::Q4_K) return {};
  std::vector<RowDotInt8Tokens> variants{dot_portable};
#ifdef SERVESCOPE_KQ8_SIMD
  if (cpu_has_avx2()) variants.push_back(dot_avx2);
  if (cpu_has_avx_vnni()) variants.push_back(dot_vnni);
  if (cpu_has_avx512_vnni()) variants.push_back(dot_avx512);
#endif
  return variants;
}

RowDotInt8Tokens kquant_int8_kernel_for(gguf::GgmlType type) {
  static const std::vector<RowDotInt8Tokens> q4_k =
      kquant_int8_kernel_variants(gguf::GgmlType::Q4_K);
  return type == gguf::GgmlType::Q4_K ? q4_k.back() : nullptr;
}

}  // namespace servescope::compute

#pragma GCC diagnostic pop
