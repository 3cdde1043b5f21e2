#include "engine/compute/cpu_int8_dot.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <type_traits>

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

// The block's 32 weights as signed bytes in one register.
template <gguf::GgmlType Type>
SERVESCOPE_AVX2 inline __m256i load_weights(const uint8_t* block);
template <>
SERVESCOPE_AVX2 inline __m256i load_weights<gguf::GgmlType::Q8_0>(const uint8_t* block) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + offsetof(BlockQ8_0, qs)));
}
template <>
SERVESCOPE_AVX2 inline __m256i load_weights<gguf::GgmlType::Q4_0>(const uint8_t* block) {
  const __m128i packed =
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + offsetof(BlockQ4_0, qs)));
  const __m128i low = _mm_and_si128(packed, _mm_set1_epi8(0x0F));
  const __m128i high = _mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0F));
  return _mm256_sub_epi8(_mm256_set_m128i(high, low), _mm256_set1_epi8(8));
}

// Eight int32 partial sums of w * x over a block. Both products take unsigned x signed bytes,
// so |w| multiplies x with w's sign moved onto it (|w| <= 127: no overflow).
struct MaddubsDot {
  SERVESCOPE_AVX2 static __m256i dot(__m256i abs_w, __m256i signed_x) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(abs_w, signed_x), _mm256_set1_epi16(1));
  }
};
struct VnniDot {
  SERVESCOPE_AVX_VNNI static __m256i dot(__m256i abs_w, __m256i signed_x) {
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), abs_w, signed_x);
  }
};

SERVESCOPE_AVX2 inline float horizontal_sum(__m256 v) {
  const __m128 half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
  return _mm_cvtss_f32(_mm_add_ss(quarter, _mm_movehdup_ps(quarter)));
}

// R rows x T tokens: each block's weights are unpacked once per row, then per token one
// integer dot and one FMA of the combined scale; every (row, token) sum is taken in the same
// order whatever R and T are. Defined once per instruction set (a function may not inline code
// compiled for more features than its own), hence the macro.
#define SERVESCOPE_DEFINE_DOT_GROUP(NAME, TARGET)                                                 \
  template <gguf::GgmlType Type, class Dot, int R, int T>                                         \
  TARGET void NAME(const uint8_t* row, uint64_t row_stride, const ActivationBlock* x,             \
                   int64_t x_stride, int64_t n, float* out, int64_t out_stride) {                 \
    using Block = typename BlockOf<Type>::Block;                                                  \
    /* Even and odd blocks go to separate sums: one chain of dependent FMAs per (row, token)      \
       would limit a lone token to one block per FMA latency. */                                  \
    __m256 acc[2][R][T];                                                                          \
    for (int r = 0; r < R; ++r) {                                                                 \
      for (int t = 0; t < T; ++t) acc[0][r][t] = acc[1][r][t] = _mm256_setzero_ps();              \
    }                                                                                             \
    for (int64_t b = 0; b < n / kQuantBlock; ++b) {                                               \
      for (int r = 0; r < R; ++r) {                                                               \
        const uint8_t* block = row + r * row_stride + b * static_cast<int64_t>(sizeof(Block));    \
        const __m256i w = load_weights<Type>(block);                                              \
        const __m256i abs_w = _mm256_sign_epi8(w, w);                                             \
        uint16_t d_bits;                                                                          \
        std::memcpy(&d_bits, block, sizeof d_bits);                                               \
        const float d_w = _cvtsh_ss(d_bits);                                                      \
        __m256(&sum)[T] = acc[b & 1][r];                                                          \
        for (int t = 0; t < T; ++t) {                                                             \
          const ActivationBlock& xb = x[t * x_stride + b];                                        \
          const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.qs));          \
          const __m256i sums = Dot::dot(abs_w, _mm256_sign_epi8(q, w));                           \
          sum[t] = _mm256_fmadd_ps(_mm256_set1_ps(d_w * xb.d), _mm256_cvtepi32_ps(sums), sum[t]); \
        }                                                                                         \
      }                                                                                           \
    }                                                                                             \
    for (int r = 0; r < R; ++r) {                                                                 \
      for (int t = 0; t < T; ++t) {                                                               \
        out[t * out_stride + r] = horizontal_sum(_mm256_add_ps(acc[0][r][t], acc[1][r][t]));      \
      }                                                                                           \
    }                                                                                             \
  }

SERVESCOPE_DEFINE_DOT_GROUP(dot_group_avx2, SERVESCOPE_AVX2)
SERVESCOPE_DEFINE_DOT_GROUP(dot_group_vnni, SERVESCOPE_AVX_VNNI)

template <gguf::GgmlType Type, class Dot, int R, int T>
void dot_group(const uint8_t* row, uint64_t row_stride, const ActivationBlock* x, int64_t x_stride,
               int64_t n, float* out, int64_t out_stride) {
  if constexpr (std::is_same_v<Dot, VnniDot>) {
    dot_group_vnni<Type, Dot, R, T>(row, row_stride, x, x_stride, n, out, out_stride);
  } else {
    dot_group_avx2<Type, Dot, R, T>(row, row_stride, x, x_stride, n, out, out_stride);
  }
}

constexpr int kGroup = 4;  // tokens per row pass
constexpr int kRows = 4;   // rows per pass for the tokens left over (a lone decode token)

template <gguf::GgmlType Type, class Dot>
void dot_rows(const uint8_t* rows, uint64_t row_stride, int64_t n_rows, const ActivationBlock* x,
              int64_t x_stride, int64_t tokens, int64_t n, float* out, int64_t out_stride) {
  int64_t t = 0;
  for (; t + kGroup <= tokens; t += kGroup) {
    for (int64_t r = 0; r < n_rows; ++r) {
      dot_group<Type, Dot, 1, kGroup>(rows + r * row_stride, row_stride, x + t * x_stride, x_stride,
                                      n, out + t * out_stride + r, out_stride);
    }
  }
  for (; t < tokens; ++t) {
    int64_t r = 0;
    for (; r + kRows <= n_rows; r += kRows) {
      dot_group<Type, Dot, kRows, 1>(rows + r * row_stride, row_stride, x + t * x_stride, 0, n,
                                     out + t * out_stride + r, 0);
    }
    for (; r < n_rows; ++r) {
      dot_group<Type, Dot, 1, 1>(rows + r * row_stride, row_stride, x + t * x_stride, 0, n,
                                 out + t * out_stride + r, 0);
    }
  }
}

bool cpu_has(const char* feature_set) {
  if (std::strcmp(feature_set, "avxvnni") == 0) {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avxvnni");
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
    if (cpu_has("avxvnni")) {
      return Int8Kernels{dot_rows<gguf::GgmlType::Q8_0, VnniDot>,
                         dot_rows<gguf::GgmlType::Q4_0, VnniDot>};
    }
    if (cpu_has("avx2")) {
      return Int8Kernels{dot_rows<gguf::GgmlType::Q8_0, MaddubsDot>,
                         dot_rows<gguf::GgmlType::Q4_0, MaddubsDot>};
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

bool has_int8_kernel(gguf::GgmlType type) {
  return type == gguf::GgmlType::Q8_0 || type == gguf::GgmlType::Q4_0;
}

RowDotInt8Tokens row_dot_int8_tokens_for(gguf::GgmlType type) {
  if (type == gguf::GgmlType::Q8_0) return int8_kernels().q8_0;
  if (type == gguf::GgmlType::Q4_0) return int8_kernels().q4_0;
  std::abort();  // callers check has_int8_kernel
}

}  // namespace servescope::compute
