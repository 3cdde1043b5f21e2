#include "engine/compute/cpu_int8_dot.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine/compute/cpu_block_dot.h"
#include "engine/compute/cpu_kquant_dot.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SERVESCOPE_X86_SIMD 1
#endif

namespace servescope::compute {
namespace {

using gguf::BlockQ4_0;
using gguf::BlockQ8_0;
using gguf::kQuantBlock;

// The 32 weights of a block as int8: Q8_0 stores them, Q4_0 stores nibbles with +8 (low
// nibbles are elements 0..15, high nibbles 16..31).
template <gguf::GgmlType Type>
struct BlockOf;
template <>
struct BlockOf<gguf::GgmlType::Q8_0> {
  using Block = BlockQ8_0;
  static void weights(const uint8_t* block, int8_t (&w)[kQuantBlock]) {
    std::memcpy(w, block + offsetof(BlockQ8_0, qs), kQuantBlock);
  }
};
template <>
struct BlockOf<gguf::GgmlType::Q4_0> {
  using Block = BlockQ4_0;
  static void weights(const uint8_t* block, int8_t (&w)[kQuantBlock]) {
    const uint8_t* qs = block + offsetof(BlockQ4_0, qs);
    for (int j = 0; j < kQuantBlock / 2; ++j) {
      w[j] = static_cast<int8_t>((qs[j] & 0x0F) - 8);
      w[j + kQuantBlock / 2] = static_cast<int8_t>((qs[j] >> 4) - 8);
    }
  }
};

float weight_scale(const uint8_t* block) {
  uint16_t d;
  std::memcpy(&d, block, sizeof d);
  return gguf::fp16_to_fp32(d);
}

template <gguf::GgmlType Type>
void dot_portable_row(const uint8_t* row, const ActivationBlock* x, int64_t x_stride,
                      int64_t tokens, int64_t n, float* out, int64_t out_stride) {
  using Block = typename BlockOf<Type>::Block;
  for (int64_t t = 0; t < tokens; ++t) {
    const ActivationBlock* xt = x + t * x_stride;
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQuantBlock; ++b) {
      const uint8_t* block = row + b * static_cast<int64_t>(sizeof(Block));
      int8_t w[kQuantBlock];
      BlockOf<Type>::weights(block, w);
      int32_t dot = 0;
      for (int j = 0; j < kQuantBlock; ++j) dot += int32_t{w[j]} * xt[b].qs[j];
      sum += weight_scale(block) * xt[b].d * static_cast<float>(dot);
    }
    out[t * out_stride] = sum;
  }
}

template <gguf::GgmlType Type>
void dot_portable(const uint8_t* rows, uint64_t row_stride, int64_t n_rows,
                  const ActivationBlock* x, int64_t x_stride, int64_t tokens, int64_t n, float* out,
                  int64_t out_stride) {
  for (int64_t r = 0; r < n_rows; ++r) {
    dot_portable_row<Type>(rows + r * row_stride, x, x_stride, tokens, n, out + r, out_stride);
  }
}

#ifdef SERVESCOPE_X86_SIMD
#define SERVESCOPE_AVX2 __attribute__((target("avx2,fma,f16c")))
#define SERVESCOPE_AVX_VNNI __attribute__((target("avx2,fma,f16c,avxvnni")))
#define SERVESCOPE_AVX512_VNNI \
  __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")))

SERVESCOPE_AVX2 inline float horizontal_sum(__m256 v) {
  const __m128 half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
  return _mm_cvtss_f32(_mm_add_ss(quarter, _mm_movehdup_ps(quarter)));
}

// The many-token kernel (prefill, large batches): tiles of R rows x T tokens, so that each
// block's weights are unpacked once per T tokens and each token's block loaded once per R rows,
// and each (row, token) block sum costs one integer dot, one conversion, one scale and one FMA:
//  - Q4_0 multiplies the stored nibbles (unsigned, weight + 8) with the signed activations and
//    starts from the token's precomputed offset (-8 x its sums of four), which gives w . q exactly;
//  - Q8_0 with a dpbusd instruction multiplies q + 128 (unsigned) with the signed weights and
//    starts from -128 x the weights' sums of four (once per row and block, not per token);
//  - Q8_0 without one (AVX2's pair products would overflow on q + 128) moves w's sign onto q.
// Every lane's integer sum equals the row kernel's, and the float steps (scale d_w * d_x, FMA
// into the even or odd block's sum, the final horizontal sum) are the same, so a token's result
// is the same bit for bit whichever kernel computed it.
#define SERVESCOPE_DEFINE_INT8_TILE(NAME, TARGET, DPBUSD, HAS_DPBUSD)                             \
  template <gguf::GgmlType Type, int R, int T>                                                    \
  TARGET void NAME(const uint8_t* rows, uint64_t row_stride, const ActivationBlock* x,            \
                   int64_t x_stride, int64_t n, float* out, int64_t out_stride) {                 \
    using Block = typename BlockOf<Type>::Block;                                                  \
    constexpr bool kQ4 = Type == gguf::GgmlType::Q4_0;                                            \
    const int64_t blocks = n / kQuantBlock;                                                       \
    const float* half_to_float = fp16_to_float_table();                                           \
    __m256 acc[2][R][T];                                                                          \
    for (int h = 0; h < 2; ++h) {                                                                 \
      for (int r = 0; r < R; ++r) {                                                               \
        for (int t = 0; t < T; ++t) acc[h][r][t] = _mm256_setzero_ps();                           \
      }                                                                                           \
    }                                                                                             \
    for (int64_t b0 = 0; b0 < blocks; b0 += 2) {                                                  \
      _Pragma("GCC unroll 2") for (int h = 0; h < 2; ++h) {                                       \
        const int64_t b = b0 + h;                                                                 \
        if (b == blocks) break;                                                                   \
        __m256i w[R];                                                                             \
        __m256i w_extra[R];                                                                       \
        __m256 d_w[R];                                                                            \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {                                     \
          const uint8_t* block = rows + r * row_stride + b * static_cast<int64_t>(sizeof(Block)); \
          uint16_t d_bits;                                                                        \
          std::memcpy(&d_bits, block, sizeof d_bits);                                             \
          d_w[r] = _mm256_set1_ps(half_to_float[d_bits]); /* a broadcast load, no convert */      \
          if constexpr (R > 1) { /* a lone token's rows: fetch the next group's block early */    \
            _mm_prefetch(reinterpret_cast<const char*>(block + R * row_stride), _MM_HINT_T0);     \
          }                                                                                       \
          if constexpr (kQ4) {                                                                    \
            const __m128i packed = _mm_loadu_si128(                                               \
                reinterpret_cast<const __m128i*>(block + offsetof(BlockQ4_0, qs)));               \
            const __m128i mask = _mm_set1_epi8(0x0F);                                             \
            w[r] = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), mask),               \
                                    _mm_and_si128(packed, mask));                                 \
            w_extra[r] = w[r];                                                                    \
          } else {                                                                                \
            w[r] = _mm256_loadu_si256(                                                            \
                reinterpret_cast<const __m256i*>(block + offsetof(BlockQ8_0, qs)));               \
            if constexpr (HAS_DPBUSD) {                                                           \
              const __m256i zero = _mm256_setzero_si256();                                        \
              w_extra[r] = _mm256_sub_epi32(                                                      \
                  zero, DPBUSD(zero, _mm256_set1_epi8(static_cast<char>(0x80)), w[r]));           \
            } else {                                                                              \
              w_extra[r] = _mm256_sign_epi8(w[r], w[r]);                                          \
            }                                                                                     \
          }                                                                                       \
        }                                                                                         \
        _Pragma("GCC unroll 8") for (int t = 0; t < T; ++t) {                                     \
          const ActivationBlock& xb = x[t * x_stride + b];                                        \
          const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.qs));          \
          const __m256 d_x = _mm256_set1_ps(xb.d);                                                \
          _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {                                   \
            __m256i lanes;                                                                        \
            if constexpr (kQ4) {                                                                  \
              lanes = DPBUSD(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.offset)),     \
                             w[r], q);                                                            \
            } else if constexpr (HAS_DPBUSD) {                                                    \
              lanes =                                                                             \
                  DPBUSD(w_extra[r],                                                              \
                         _mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80))), w[r]);   \
            } else {                                                                              \
              lanes =                                                                             \
                  _mm256_madd_epi16(_mm256_maddubs_epi16(w_extra[r], _mm256_sign_epi8(q, w[r])),  \
                                    _mm256_set1_epi16(1));                                        \
            }                                                                                     \
            acc[h][r][t] = _mm256_fmadd_ps(_mm256_mul_ps(d_w[r], d_x), _mm256_cvtepi32_ps(lanes), \
                                           acc[h][r][t]);                                         \
          }                                                                                       \
        }                                                                                         \
      }                                                                                           \
    }                                                                                             \
    for (int r = 0; r < R; ++r) {                                                                 \
      for (int t = 0; t < T; ++t) {                                                               \
        out[t * out_stride + r] = horizontal_sum(_mm256_add_ps(acc[0][r][t], acc[1][r][t]));      \
      }                                                                                           \
    }                                                                                             \
  }

SERVESCOPE_AVX2 inline __m256i dpbusd_avx2(__m256i src, __m256i u, __m256i s) {
  return _mm256_add_epi32(src, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}
SERVESCOPE_AVX_VNNI inline __m256i dpbusd_vnni(__m256i src, __m256i u, __m256i s) {
  return _mm256_dpbusd_avx_epi32(src, u, s);
}

SERVESCOPE_DEFINE_INT8_TILE(tile_avx2, SERVESCOPE_AVX2, dpbusd_avx2, false)
SERVESCOPE_DEFINE_INT8_TILE(tile_vnni, SERVESCOPE_AVX_VNNI, dpbusd_vnni, true)

// GCC 12's AVX-512 insert/extract intrinsics start from _mm512_undefined_*(), which its
// (maybe-)uninitialized warnings report inside the header; the values are fully defined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// With 512-bit registers a pair of blocks fills one register: lanes 0-7 hold the even block's
// sums and lanes 8-15 the odd block's, which are exactly the row kernel's two separate sums, so
// one instruction does the work of two and the results stay the same bit for bit.
SERVESCOPE_AVX512_VNNI inline __m512i pair_of(__m256i even, __m256i odd) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(even), odd, 1);
}
SERVESCOPE_AVX512_VNNI inline __m512 pair_of(float even, float odd) {
  return _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(even), _mm512_set1_ps(odd));
}
SERVESCOPE_AVX512_VNNI inline __m256i load_256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

SERVESCOPE_AVX512_VNNI inline __m256 even_plus_odd(__m512 pair_sums) {
  return _mm256_add_ps(_mm512_castps512_ps256(pair_sums),
                       _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(pair_sums), 1)));
}

// horizontal_sum(even_plus_odd(a)) for four registers at once, stored to out[0..3]: the same
// additions of the same lanes in the same order (halves, then lanes i and i + 2, then 0 and 1),
// with the four sums' steps side by side in shared registers.
SERVESCOPE_AVX512_VNNI inline void store_four_sums(__m512 a, __m512 b, __m512 c, __m512 d,
                                                   float* out) {
  const __m256 ya = even_plus_odd(a), yb = even_plus_odd(b);
  const __m256 yc = even_plus_odd(c), yd = even_plus_odd(d);
  // [a: y_i + y_i+4 (i < 4) | b: same], [c | d]
  const __m256 ab =
      _mm256_add_ps(_mm256_permute2f128_ps(ya, yb, 0x20), _mm256_permute2f128_ps(ya, yb, 0x31));
  const __m256 cd =
      _mm256_add_ps(_mm256_permute2f128_ps(yc, yd, 0x20), _mm256_permute2f128_ps(yc, yd, 0x31));
  // [a0+a2, a1+a3, c0+c2, c1+c3 | b0+b2, b1+b3, d0+d2, d1+d3]
  const __m256 quarters = _mm256_add_ps(_mm256_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
                                        _mm256_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
  const __m256 sums = _mm256_add_ps(quarters, _mm256_movehdup_ps(quarters));  // lanes 0, 4, 2, 6
  const __m256 ordered = _mm256_permutevar8x32_ps(sums, _mm256_setr_epi32(0, 4, 2, 6, 0, 4, 2, 6));
  _mm_storeu_ps(out, _mm256_castps256_ps128(ordered));
}

// out[t * out_stride + r] = the sum of all 16 lanes of acc[r][t].
template <int R, int T>
SERVESCOPE_AVX512_VNNI inline void store_tile_sums(const __m512 (&acc)[R][T], float* out,
                                                   int64_t out_stride) {
  for (int t = 0; t < T; ++t) {
    if constexpr (R == 4) {
      store_four_sums(acc[0][t], acc[1][t], acc[2][t], acc[3][t], out + t * out_stride);
    } else {
      for (int r = 0; r < R; ++r) {
        out[t * out_stride + r] = horizontal_sum(even_plus_odd(acc[r][t]));
      }
    }
  }
}

// Weights of block `block` (and the next one unless `lone`): the unsigned nibbles (Q4_0) or the
// signed bytes and -128 x their sums of four (Q8_0), with the scales.
template <gguf::GgmlType Type>
SERVESCOPE_AVX512_VNNI inline void weight_pair(const float* half_to_float, const uint8_t* block,
                                               bool lone, __m512i& w, __m512i& w_extra,
                                               __m512& d_w) {
  using Block = typename BlockOf<Type>::Block;
  const uint8_t* next = lone ? block : block + sizeof(Block);
  uint16_t d_bits[2];
  std::memcpy(&d_bits[0], block, sizeof(uint16_t));
  std::memcpy(&d_bits[1], next, sizeof(uint16_t));
  d_w = pair_of(half_to_float[d_bits[0]], half_to_float[d_bits[1]]);  // broadcast loads
  if constexpr (Type == gguf::GgmlType::Q4_0) {
    const __m256i packed = _mm256_set_m128i(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(next + offsetof(BlockQ4_0, qs))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + offsetof(BlockQ4_0, qs))));
    const __m256i mask = _mm256_set1_epi8(0x0F);
    // [low 0, low 1, high 0, high 1] -> [low 0, high 0, low 1, high 1] (16-byte lanes)
    const __m512i grouped = pair_of(_mm256_and_si256(packed, mask),
                                    _mm256_and_si256(_mm256_srli_epi16(packed, 4), mask));
    w = _mm512_shuffle_i64x2(grouped, grouped, _MM_SHUFFLE(3, 1, 2, 0));
    w_extra = w;
  } else {
    w = pair_of(load_256(block + offsetof(BlockQ8_0, qs)),
                load_256(next + offsetof(BlockQ8_0, qs)));
    const __m512i zero = _mm512_setzero_si512();
    w_extra = _mm512_sub_epi32(
        zero, _mm512_dpbusd_epi32(zero, _mm512_set1_epi8(static_cast<char>(0x80)), w));
  }
}

template <gguf::GgmlType Type, int R, int T>
SERVESCOPE_AVX512_VNNI void tile_pairs_avx512(const uint8_t* rows, uint64_t row_stride,
                                              const ActivationBlock* x, int64_t x_stride, int64_t n,
                                              float* out, int64_t out_stride) {
  using Block = typename BlockOf<Type>::Block;
  const float* half_to_float = fp16_to_float_table();
  const int64_t blocks = n / kQuantBlock;
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < blocks; b += 2) {
    const bool lone = b + 1 == blocks;  // an odd count's last block: only the even lanes
    const __mmask16 lanes_used = lone ? 0x00FF : 0xFFFF;
    __m512i w[R];
    __m512i w_extra[R];
    __m512 d_w[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      weight_pair<Type>(half_to_float,
                        rows + r * row_stride + b * static_cast<int64_t>(sizeof(Block)), lone, w[r],
                        w_extra[r], d_w[r]);
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const ActivationBlock* xb = x + t * x_stride + b;
      const ActivationBlock* next = lone ? xb : xb + 1;
      const __m512i q = pair_of(load_256(xb->qs), load_256(next->qs));
      const __m512 d_x = pair_of(xb->d, next->d);
      __m512i token_extra;
      if constexpr (Type == gguf::GgmlType::Q4_0) {
        token_extra = pair_of(load_256(xb->offset), load_256(next->offset));
      } else {
        token_extra = _mm512_xor_si512(q, _mm512_set1_epi8(static_cast<char>(0x80)));
      }
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m512i sums = Type == gguf::GgmlType::Q4_0
                                 ? _mm512_dpbusd_epi32(token_extra, w[r], q)
                                 : _mm512_dpbusd_epi32(w_extra[r], token_extra, w[r]);
        acc[r][t] = _mm512_mask3_fmadd_ps(_mm512_mul_ps(d_w[r], d_x), _mm512_cvtepi32_ps(sums),
                                          acc[r][t], lanes_used);
      }
    }
  }
  store_tile_sums<R, T>(acc, out, out_stride);
}

// A row's block pair for 512-bit registers, packed once per R-row tile and read for every token.
struct alignas(64) WeightBlockPair {
  uint8_t w[2 * kQuantBlock];  // Q4_0: unsigned nibbles in element order; Q8_0: signed bytes
  int32_t extra[16];           // Q8_0: -128 x the weights' sums of four
  float d[16];
};

template <gguf::GgmlType Type>
SERVESCOPE_AVX512_VNNI void pack_weight_pairs(const uint8_t* row, int64_t blocks,
                                              WeightBlockPair* out) {
  using Block = typename BlockOf<Type>::Block;
  const float* half_to_float = fp16_to_float_table();
  for (int64_t b = 0; b < blocks; b += 2) {
    WeightBlockPair& pair = out[b / 2];
    __m512i w;
    __m512i w_extra;
    __m512 d_w;
    weight_pair<Type>(half_to_float, row + b * static_cast<int64_t>(sizeof(Block)), b + 1 == blocks,
                      w, w_extra, d_w);
    if (b + 1 == blocks) {  // zero weights and scales in the odd lanes: they add exact zeros
      w = _mm512_maskz_mov_epi64(0x0F, w);
      w_extra = _mm512_maskz_mov_epi32(0x00FF, w_extra);
      d_w = _mm512_maskz_mov_ps(0x00FF, d_w);
    }
    _mm512_store_si512(pair.w, w);
    _mm512_store_si512(pair.extra, w_extra);
    _mm512_store_ps(pair.d, d_w);
  }
}

template <gguf::GgmlType Type, int R, int T>
SERVESCOPE_AVX512_VNNI void pair_tile(const WeightBlockPair* w, int64_t pairs,
                                      const TokenBlockPair* x, float* out, int64_t out_stride) {
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < pairs; ++p) {
    __m512i weights[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) weights[r] = _mm512_load_si512(w[r * pairs + p].w);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const TokenBlockPair& xt = x[t * pairs + p];
      const __m512i q = _mm512_load_si512(xt.q);
      const __m512i token_extra = _mm512_load_si512(xt.extra);
      const __m512 d_x = _mm512_load_ps(xt.d);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m512i sums = Type == gguf::GgmlType::Q4_0
                                 ? _mm512_dpbusd_epi32(token_extra, weights[r], q)
                                 : _mm512_dpbusd_epi32(_mm512_load_si512(w[r * pairs + p].extra),
                                                       token_extra, weights[r]);
        acc[r][t] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_load_ps(w[r * pairs + p].d), d_x),
                                    _mm512_cvtepi32_ps(sums), acc[r][t]);
      }
    }
  }
  store_tile_sums<R, T>(acc, out, out_stride);
}

constexpr int kPairRows = 4;    // rows per tile (their packed pairs stay in L1)
constexpr int kPairTokens = 4;  // tokens per tile: 16 sums in registers

template <gguf::GgmlType Type, int R>
void pair_tiles_over_tokens(const WeightBlockPair* w, int64_t pairs, const TokenBlockPair* x,
                            int64_t tokens, float* out, int64_t out_stride) {
  int64_t t = 0;
  for (; t + kPairTokens <= tokens; t += kPairTokens) {
    pair_tile<Type, R, kPairTokens>(w, pairs, x + t * pairs, out + t * out_stride, out_stride);
  }
  for (; t < tokens; ++t) {
    pair_tile<Type, R, 1>(w, pairs, x + t * pairs, out + t * out_stride, out_stride);
  }
}

template <gguf::GgmlType Type>
void dot_pairs(const uint8_t* rows, uint64_t row_stride, int64_t n_rows, const TokenBlockPair* x,
               int64_t tokens, int64_t n, float* out, int64_t out_stride) {
  const int64_t blocks = n / kQuantBlock;
  const int64_t pairs = (blocks + 1) / 2;
  thread_local std::vector<WeightBlockPair> packed;
  packed.resize(static_cast<size_t>(kPairRows * pairs));
  for (int64_t r = 0; r < n_rows; r += kPairRows) {
    const int64_t rows_here = std::min<int64_t>(kPairRows, n_rows - r);
    for (int64_t i = 0; i < rows_here; ++i) {
      pack_weight_pairs<Type>(rows + (r + i) * row_stride, blocks, packed.data() + i * pairs);
    }
    float* o = out + r;
    switch (rows_here) {
      case 4:
        pair_tiles_over_tokens<Type, 4>(packed.data(), pairs, x, tokens, o, out_stride);
        break;
      case 3:
        pair_tiles_over_tokens<Type, 3>(packed.data(), pairs, x, tokens, o, out_stride);
        break;
      case 2:
        pair_tiles_over_tokens<Type, 2>(packed.data(), pairs, x, tokens, o, out_stride);
        break;
      default:
        pair_tiles_over_tokens<Type, 1>(packed.data(), pairs, x, tokens, o, out_stride);
    }
  }
}

SERVESCOPE_AVX512_VNNI void pack_token_pairs_avx512(bool q4, const ActivationBlock* x,
                                                    int64_t x_stride, int64_t tokens, int64_t n,
                                                    TokenBlockPair* out) {
  const int64_t blocks = n / kQuantBlock;
  const int64_t pairs = (blocks + 1) / 2;
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t b = 0; b < blocks; b += 2) {
      const ActivationBlock& even = x[t * x_stride + b];
      const bool lone = b + 1 == blocks;
      const ActivationBlock& odd = lone ? even : x[t * x_stride + b + 1];
      const __mmask16 used = lone ? 0x00FF : 0xFFFF;
      TokenBlockPair& pair = out[t * pairs + b / 2];
      const __m512i q = _mm512_maskz_mov_epi32(used, pair_of(load_256(even.qs), load_256(odd.qs)));
      _mm512_store_si512(pair.q, q);
      const __m512i extra = q4 ? pair_of(load_256(even.offset), load_256(odd.offset))
                               : _mm512_xor_si512(q, _mm512_set1_epi8(static_cast<char>(0x80)));
      _mm512_store_si512(pair.extra, _mm512_maskz_mov_epi32(used, extra));
      _mm512_store_ps(pair.d, _mm512_maskz_mov_ps(used, pair_of(even.d, odd.d)));
    }
  }
}

// A lone token (decode, or each token of a batch below kMinTokensForTiles) against the rows as
// they are stored: the token's block pairs are packed once per call (lone_tokens_avx512), so
// per row and pair of blocks what is left is the weights' unpacking, one integer dot (three for
// Q8_0), one conversion, one scale product and one FMA. Every lane takes tile_pairs_avx512's
// steps (the same integer sums, scale products, FMAs and final sum), so the results are the
// same bit for bit.
template <gguf::GgmlType Type>
SERVESCOPE_AVX512_VNNI inline __m512i lone_weight_pair(const uint8_t* block, const uint8_t* next) {
  if constexpr (Type == gguf::GgmlType::Q4_0) {
    const __m256i packed = _mm256_inserti128_si256(
        _mm256_castsi128_si256(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + offsetof(BlockQ4_0, qs)))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(next + offsetof(BlockQ4_0, qs))), 1);
    // [even, even, odd, odd] (16-byte lanes), the second and fourth shifted to their high
    // nibbles: [low 0, high 0, low 1, high 1] once masked.
    const __m512i wide = _mm512_castsi256_si512(packed);
    const __m512i twice = _mm512_shuffle_i64x2(wide, wide, _MM_SHUFFLE(1, 1, 0, 0));
    const __m512i shifted = _mm512_mask_srli_epi16(twice, 0xFF00FF00u, twice, 4);
    return _mm512_and_si512(shifted, _mm512_set1_epi8(0x0F));
  } else {
    return pair_of(load_256(block + offsetof(BlockQ8_0, qs)),
                   load_256(next + offsetof(BlockQ8_0, qs)));
  }
}

// The integer sums of a row's block pair with the token's: as tile_pairs_avx512 takes them.
template <gguf::GgmlType Type>
SERVESCOPE_AVX512_VNNI inline __m512i lone_pair_sums(__m512i w, __m512i q, __m512i token_extra) {
  if constexpr (Type == gguf::GgmlType::Q4_0) {
    return _mm512_dpbusd_epi32(token_extra, w, q);
  } else {
    const __m512i zero = _mm512_setzero_si512();
    const __m512i w_extra = _mm512_sub_epi32(
        zero, _mm512_dpbusd_epi32(zero, _mm512_set1_epi8(static_cast<char>(0x80)), w));
    return _mm512_dpbusd_epi32(w_extra, token_extra, w);
  }
}

// A row's scale products d_w * d_x for a block pair, [even x8, odd x8]: the weights' scales
// broadcast from the half-precision table (loads, no conversion or shuffle), times the token's.
SERVESCOPE_AVX512_VNNI inline __m512 lone_scales(const float* table, const uint8_t* block,
                                                 const uint8_t* next, __m512 d_x) {
  uint16_t even;
  uint16_t odd;
  std::memcpy(&even, block, sizeof even);
  std::memcpy(&odd, next, sizeof odd);
  const __m512 d_w =
      _mm512_mask_mov_ps(_mm512_set1_ps(table[even]), 0xFF00, _mm512_set1_ps(table[odd]));
  return _mm512_mul_ps(d_w, d_x);
}

// Rows [0, R) against one packed token (x[p]: its block pairs).
template <gguf::GgmlType Type, int R>
SERVESCOPE_AVX512_VNNI void lone_token_tile(const uint8_t* rows, uint64_t row_stride,
                                            const TokenBlockPair* x, int64_t blocks, float* out) {
  using Block = typename BlockOf<Type>::Block;
  const float* table = fp16_to_float_table();
  __m512 acc[R][1];
  for (int r = 0; r < R; ++r) acc[r][0] = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; b += 2) {
    const bool lone = b + 1 == blocks;  // an odd count's last block: only the even lanes
    const __mmask16 lanes_used = lone ? 0x00FF : 0xFFFF;
    const TokenBlockPair& xp = x[b / 2];
    const __m512i q = _mm512_load_si512(xp.q);
    const __m512i token_extra = _mm512_load_si512(xp.extra);
    const __m512 d_x = _mm512_load_ps(xp.d);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const uint8_t* block = rows + r * row_stride + b * static_cast<int64_t>(sizeof(Block));
      const uint8_t* next = lone ? block : block + sizeof(Block);
      if constexpr (R > 1) {  // the next group of rows' pair: a decode's weights come from L3
        _mm_prefetch(reinterpret_cast<const char*>(block + R * row_stride), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(next + R * row_stride + sizeof(Block) - 1),
                     _MM_HINT_T0);
      }
      const __m512i sums =
          lone_pair_sums<Type>(lone_weight_pair<Type>(block, next), q, token_extra);
      acc[r][0] = _mm512_mask3_fmadd_ps(lone_scales(table, block, next, d_x),
                                        _mm512_cvtepi32_ps(sums), acc[r][0], lanes_used);
    }
  }
  store_tile_sums<R, 1>(acc, out, 0);
}

// Each of `tokens` tokens alone over rows [0, n_rows): packed, then four rows at a time.
template <gguf::GgmlType Type>
void lone_tokens_avx512(const uint8_t* rows, uint64_t row_stride, int64_t n_rows,
                        const ActivationBlock* x, int64_t x_stride, int64_t tokens, int64_t n,
                        float* out, int64_t out_stride) {
  const int64_t blocks = n / kQuantBlock;
  const int64_t pairs = (blocks + 1) / 2;
  thread_local std::vector<TokenBlockPair> packed;
  packed.resize(static_cast<size_t>(pairs));
  for (int64_t t = 0; t < tokens; ++t) {
    pack_token_pairs_avx512(Type == gguf::GgmlType::Q4_0, x + t * x_stride, 0, 1, n, packed.data());
    float* o = out + t * out_stride;
    int64_t r = 0;
    for (; r + 4 <= n_rows; r += 4) {
      lone_token_tile<Type, 4>(rows + r * row_stride, row_stride, packed.data(), blocks, o + r);
    }
    for (; r < n_rows; ++r) {
      lone_token_tile<Type, 1>(rows + r * row_stride, row_stride, packed.data(), blocks, o + r);
    }
  }
}

#pragma GCC diagnostic pop

// Tiles of R rows x T tokens over the whole (rows x tokens) range, smaller tiles at the edges.
template <gguf::GgmlType Type, class Isa>
void dot_tiles(const uint8_t* rows, uint64_t row_stride, int64_t n_rows, const ActivationBlock* x,
               int64_t x_stride, int64_t tokens, int64_t n, float* out, int64_t out_stride) {
  constexpr int R = Isa::kRows;
  constexpr int T = Isa::kTokens;
  int64_t r = 0;
  for (; r + R <= n_rows; r += R) {
    int64_t t = 0;
    for (; t + T <= tokens; t += T) {
      Isa::template tile<Type, R, T>(rows + r * row_stride, row_stride, x + t * x_stride, x_stride,
                                     n, out + t * out_stride + r, out_stride);
    }
    for (; t < tokens; ++t) {
      Isa::template tile<Type, R, 1>(rows + r * row_stride, row_stride, x + t * x_stride, x_stride,
                                     n, out + t * out_stride + r, out_stride);
    }
  }
  for (; r < n_rows; ++r) {
    int64_t t = 0;
    for (; t + T <= tokens; t += T) {
      Isa::template tile<Type, 1, T>(rows + r * row_stride, row_stride, x + t * x_stride, x_stride,
                                     n, out + t * out_stride + r, out_stride);
    }
    for (; t < tokens; ++t) {
      Isa::template tile<Type, 1, 1>(rows + r * row_stride, row_stride, x + t * x_stride, x_stride,
                                     n, out + t * out_stride + r, out_stride);
    }
  }
}

// Tile shapes, measured (1344 x 256, 128 tokens): with 16 vector registers 1 row x 4 tokens
// (8 sums) beat 2 x 2, 2 x 3 and 4 x 1 by 5-40%; the 512-bit kernel holds 4 x 4 block pairs.
struct Avx2Tiles {
  static constexpr int kRows = 1, kTokens = 4;
  static constexpr bool kLoneTokenKernel = false;  // a lone token takes kRows x 1 tiles
  template <gguf::GgmlType Type, int R, int T>
  static void tile(const uint8_t* rows, uint64_t row_stride, const ActivationBlock* x,
                   int64_t x_stride, int64_t n, float* out, int64_t out_stride) {
    tile_avx2<Type, R, T>(rows, row_stride, x, x_stride, n, out, out_stride);
  }
};
struct VnniTiles {
  static constexpr int kRows = 1, kTokens = 4;
  static constexpr bool kLoneTokenKernel = false;
  template <gguf::GgmlType Type, int R, int T>
  static void tile(const uint8_t* rows, uint64_t row_stride, const ActivationBlock* x,
                   int64_t x_stride, int64_t n, float* out, int64_t out_stride) {
    tile_vnni<Type, R, T>(rows, row_stride, x, x_stride, n, out, out_stride);
  }
};
struct Avx512Tiles {
  static constexpr int kRows = 4, kTokens = 4;
  static constexpr bool kLoneTokenKernel = true;  // lone_tokens_avx512
  template <gguf::GgmlType Type, int R, int T>
  static void tile(const uint8_t* rows, uint64_t row_stride, const ActivationBlock* x,
                   int64_t x_stride, int64_t n, float* out, int64_t out_stride) {
    tile_pairs_avx512<Type, R, T>(rows, row_stride, x, x_stride, n, out, out_stride);
  }
};

constexpr int kRows = 4;  // rows per pass for the tokens left over (a lone decode token)
// From this many tokens on, the tile kernel (same results, fewer instructions per block sum).
constexpr int64_t kMinTokensForTiles = 4;

template <gguf::GgmlType Type, class Tiles>
void dot_rows(const uint8_t* rows, uint64_t row_stride, int64_t n_rows, const ActivationBlock* x,
              int64_t x_stride, int64_t tokens, int64_t n, float* out, int64_t out_stride) {
  if (tokens >= kMinTokensForTiles) {
    dot_tiles<Type, Tiles>(rows, row_stride, n_rows, x, x_stride, tokens, n, out, out_stride);
    return;
  }
  if constexpr (Tiles::kLoneTokenKernel) {
    lone_tokens_avx512<Type>(rows, row_stride, n_rows, x, x_stride, tokens, n, out, out_stride);
    return;
  }
  // Each token alone, four rows at a time: the tile kernel's unsigned nibbles and offsets (Q4_0)
  // take fewer instructions per block than moving signs.
  for (int64_t t = 0; t < tokens; ++t) {
    int64_t r = 0;
    for (; r + kRows <= n_rows; r += kRows) {
      Tiles::template tile<Type, kRows, 1>(rows + r * row_stride, row_stride, x + t * x_stride, 0,
                                           n, out + t * out_stride + r, 0);
    }
    for (; r < n_rows; ++r) {
      Tiles::template tile<Type, 1, 1>(rows + r * row_stride, row_stride, x + t * x_stride, 0, n,
                                       out + t * out_stride + r, 0);
    }
  }
}

bool cpu_has(const char* feature_set) {
  if (std::strcmp(feature_set, "avxvnni") == 0) {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avxvnni");
  }
  if (std::strcmp(feature_set, "avx512vnni") == 0) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni");
  }
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("f16c");
}
#endif

struct Int8Kernels {
  RowDotInt8Tokens q8_0, q4_0;
};

const Int8Kernels& int8_kernels() {
  static const Int8Kernels kernels = [] {
#ifdef SERVESCOPE_X86_SIMD
    if (cpu_has("avx2") && cpu_has("avx512vnni")) {  // with or without AVX-VNNI (Zen 4)
      return Int8Kernels{dot_rows<gguf::GgmlType::Q8_0, Avx512Tiles>,
                         dot_rows<gguf::GgmlType::Q4_0, Avx512Tiles>};
    }
    if (cpu_has("avxvnni")) {
      return Int8Kernels{dot_rows<gguf::GgmlType::Q8_0, VnniTiles>,
                         dot_rows<gguf::GgmlType::Q4_0, VnniTiles>};
    }
    if (cpu_has("avx2")) {
      return Int8Kernels{dot_rows<gguf::GgmlType::Q8_0, Avx2Tiles>,
                         dot_rows<gguf::GgmlType::Q4_0, Avx2Tiles>};
    }
#endif
    return Int8Kernels{dot_portable<gguf::GgmlType::Q8_0>, dot_portable<gguf::GgmlType::Q4_0>};
  }();
  return kernels;
}

}  // namespace

namespace {

void quantize_activations_portable(const float* x, int64_t n, ActivationBlock* out) {
  for (int64_t b = 0; b < n / kQuantBlock; ++b) {
    const float* xb = x + b * kQuantBlock;
    float amax = 0.0f;
    for (int j = 0; j < kQuantBlock; ++j) amax = std::max(amax, std::abs(xb[j]));
    const float d = amax / 127.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    out[b].d = d;
    for (int j = 0; j < kQuantBlock; ++j) {
      out[b].qs[j] = static_cast<int8_t>(std::lrint(xb[j] * inverse));
    }
    for (int i = 0; i < kQuantBlock / 4; ++i) {
      out[b].offset[i] = -8 * (out[b].qs[4 * i] + out[b].qs[4 * i + 1] + out[b].qs[4 * i + 2] +
                               out[b].qs[4 * i + 3]);
    }
  }
}

#ifdef SERVESCOPE_X86_SIMD
// The same arithmetic in registers (cvtps rounds to nearest even, as lrint does by default).
SERVESCOPE_AVX2 void quantize_activations_avx2(const float* x, int64_t n, ActivationBlock* out) {
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < n / kQuantBlock; ++b) {
    const float* xb = x + b * kQuantBlock;
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int g = 0; g < 4; ++g) {
      v[g] = _mm256_loadu_ps(xb + 8 * g);
      amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign_bit, v[g]));
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    const float d = _mm_cvtss_f32(m) / 127.0f;
    const __m256 inverse = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    out[b].d = d;
    __m256i q[4];
    for (int g = 0; g < 4; ++g) q[g] = _mm256_cvtps_epi32(_mm256_mul_ps(v[g], inverse));
    const __m256i packed =
        _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    const __m256i ordered =
        _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].qs), ordered);
    const __m256i sums_of_four =
        _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), ordered), _mm256_set1_epi16(1));
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(out[b].offset),
        _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sums_of_four, 3)));
  }
}
#endif

}  // namespace

void quantize_activations(const float* x, int64_t n, ActivationBlock* out) {
#ifdef SERVESCOPE_X86_SIMD
  static const bool avx2 = cpu_has("avx2");
  if (avx2) {
    quantize_activations_avx2(x, n, out);
    return;
  }
#endif
  quantize_activations_portable(x, n, out);
}

std::vector<RowDotInt8Tokens> int8_kernel_variants(gguf::GgmlType type) {
  if (type == gguf::GgmlType::Q4_K) return kquant_int8_kernel_variants(type);
  const bool q8 = type == gguf::GgmlType::Q8_0;
  std::vector<RowDotInt8Tokens> variants{q8 ? dot_portable<gguf::GgmlType::Q8_0>
                                            : dot_portable<gguf::GgmlType::Q4_0>};
#ifdef SERVESCOPE_X86_SIMD
  if (cpu_has("avx2")) {
    variants.push_back(q8 ? dot_rows<gguf::GgmlType::Q8_0, Avx2Tiles>
                          : dot_rows<gguf::GgmlType::Q4_0, Avx2Tiles>);
  }
  if (cpu_has("avxvnni")) {
    variants.push_back(q8 ? dot_rows<gguf::GgmlType::Q8_0, VnniTiles>
                          : dot_rows<gguf::GgmlType::Q4_0, VnniTiles>);
  }
  if (cpu_has("avx2") && cpu_has("avx512vnni")) {
    variants.push_back(q8 ? dot_rows<gguf::GgmlType::Q8_0, Avx512Tiles>
                          : dot_rows<gguf::GgmlType::Q4_0, Avx512Tiles>);
  }
#endif
  return variants;
}

Int8PairKernel int8_pair_kernel_for(gguf::GgmlType type) {
#ifdef SERVESCOPE_X86_SIMD
  static const bool avx512_vnni = cpu_has("avx512vnni");
  if (avx512_vnni && type == gguf::GgmlType::Q8_0) return dot_pairs<gguf::GgmlType::Q8_0>;
  if (avx512_vnni && type == gguf::GgmlType::Q4_0) return dot_pairs<gguf::GgmlType::Q4_0>;
#endif
  (void)type;
  return nullptr;
}

void pack_token_pairs(gguf::GgmlType type, const ActivationBlock* x, int64_t x_stride,
                      int64_t tokens, int64_t n, TokenBlockPair* out) {
#ifdef SERVESCOPE_X86_SIMD
  pack_token_pairs_avx512(type == gguf::GgmlType::Q4_0, x, x_stride, tokens, n, out);
#else
  (void)type, (void)x, (void)x_stride, (void)tokens, (void)n, (void)out;
  std::abort();  // callers check int8_pair_kernel_for
#endif
}

bool has_int8_kernel(gguf::GgmlType type) {
  return type == gguf::GgmlType::Q8_0 || type == gguf::GgmlType::Q4_0 ||
         type == gguf::GgmlType::Q4_K;
}

RowDotInt8Tokens row_dot_int8_tokens_for(gguf::GgmlType type) {
  if (const RowDotInt8Tokens dot = kquant_int8_kernel_for(type)) return dot;
  if (type == gguf::GgmlType::Q8_0) return int8_kernels().q8_0;
  if (type == gguf::GgmlType::Q4_0) return int8_kernels().q4_0;
  std::abort();  // callers check has_int8_kernel
}

}  // namespace servescope::compute
