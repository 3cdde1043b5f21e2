#include "engine/compute/cpu_int8_dot.h"

#include <algorithm>
#include <cmath>

#include "engine/compute/cpu_features.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SERVESCOPE_X86_SIMD 1
#define SERVESCOPE_AVX2 __attribute__((target("avx2,fma,f16c")))
#endif

namespace servescope::compute {
namespace {

using gguf::kQuantBlock;

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
  static const bool avx2 = cpu_has_avx2();
  if (avx2) {
    quantize_activations_avx2(x, n, out);
    return;
  }
#endif
  quantize_activations_portable(x, n, out);
}

}  // namespace servescope::compute
