#include "engine/compute/cpu_stored_attention.h"

#include <algorithm>
#include <cassert>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "engine/compute/cpu_features.h"
#define SERVESCOPE_X86_SIMD 1
#define SERVESCOPE_AVX2 __attribute__((target("avx2,fma,f16c")))
#endif

namespace servescope::compute {
namespace {

constexpr int64_t kLanes = 8;
// Query heads that share one pass over the keys (or values): each stored row is loaded and
// converted once for both.
constexpr int kHeadsPerPass = 2;
// Value columns summed per pass: two heads' accumulators of this many vectors, the row's
// vectors and the two weights fit AVX2's 16 registers.
constexpr int kValueVectors = 4;

#ifdef SERVESCOPE_X86_SIMD

template <bool Half>
SERVESCOPE_AVX2 inline __m256 load8(const uint8_t* row, int64_t column) {
  if constexpr (Half) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * column)));
  } else {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + column);
  }
}

SERVESCOPE_AVX2 inline float sum_lanes(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Heads h0 and h0 + 1 (when Both) against every key of the range.
template <bool Half, bool Both>
SERVESCOPE_AVX2 void key_scores_pass(const StoredHead& head, const float* q0, int64_t first,
                                     int64_t n_keys, float scale, float* scores0) {
  const int64_t d = head.head_dim;
  const float* q1 = q0 + d;
  float* scores1 = scores0 + n_keys;
  for (int64_t t = first; t < n_keys; ++t) {
    const uint8_t* k = head.keys + static_cast<uint64_t>(head.slots[t]) * head.row_bytes;
    __m256 a0 = _mm256_setzero_ps();
    __m256 a1 = _mm256_setzero_ps();
    for (int64_t c = 0; c < d; c += kLanes) {
      const __m256 kc = load8<Half>(k, c);
      a0 = _mm256_fmadd_ps(kc, _mm256_loadu_ps(q0 + c), a0);
      if constexpr (Both) a1 = _mm256_fmadd_ps(kc, _mm256_loadu_ps(q1 + c), a1);
    }
    scores0[t] = scale * sum_lanes(a0);
    if constexpr (Both) scores1[t] = scale * sum_lanes(a1);
  }
}

// Columns [c0, c0 + 8 V) of heads h0 and h0 + 1 (when Both).
template <bool Half, bool Both, int V>
SERVESCOPE_AVX2 void value_sum_pass(const StoredHead& head, const float* p0, int64_t first,
                                    int64_t n_keys, int64_t c0, float* out0) {
  const int64_t d = head.head_dim;
  const float* p1 = p0 + n_keys;
  __m256 a0[V];
  __m256 a1[V];
  for (int j = 0; j < V; ++j) a0[j] = a1[j] = _mm256_setzero_ps();
  for (int64_t t = first; t < n_keys; ++t) {
    const uint8_t* v = head.values + static_cast<uint64_t>(head.slots[t]) * head.row_bytes;
    const __m256 w0 = _mm256_set1_ps(p0[t]);
    const __m256 w1 = Both ? _mm256_set1_ps(p1[t]) : w0;
    for (int j = 0; j < V; ++j) {
      const __m256 vc = load8<Half>(v, c0 + j * kLanes);
      a0[j] = _mm256_fmadd_ps(w0, vc, a0[j]);
      if constexpr (Both) a1[j] = _mm256_fmadd_ps(w1, vc, a1[j]);
    }
  }
  for (int j = 0; j < V; ++j) {
    _mm256_storeu_ps(out0 + c0 + j * kLanes, a0[j]);
    if constexpr (Both) _mm256_storeu_ps(out0 + d + c0 + j * kLanes, a1[j]);
  }
}

template <bool Half, bool Both>
SERVESCOPE_AVX2 void value_sum_heads(const StoredHead& head, const float* p0, int64_t first,
                                     int64_t n_keys, float* out0) {
  for (int64_t c0 = 0; c0 < head.head_dim; c0 += kValueVectors * kLanes) {
    switch (std::min<int64_t>(kValueVectors, (head.head_dim - c0) / kLanes)) {
      case 4:
        value_sum_pass<Half, Both, 4>(head, p0, first, n_keys, c0, out0);
        break;
      case 3:
        value_sum_pass<Half, Both, 3>(head, p0, first, n_keys, c0, out0);
        break;
      case 2:
        value_sum_pass<Half, Both, 2>(head, p0, first, n_keys, c0, out0);
        break;
      default:
        value_sum_pass<Half, Both, 1>(head, p0, first, n_keys, c0, out0);
        break;
    }
  }
}

template <bool Half>
void key_scores(const StoredHead& head, const float* q, int group, int64_t first, int64_t n_keys,
                float scale, float* scores) {
  for (int h = 0; h < group; h += kHeadsPerPass) {
    const float* qh = q + h * head.head_dim;
    float* sh = scores + h * n_keys;
    if (h + 1 < group) {
      key_scores_pass<Half, true>(head, qh, first, n_keys, scale, sh);
    } else {
      key_scores_pass<Half, false>(head, qh, first, n_keys, scale, sh);
    }
  }
}

template <bool Half>
void value_sum(const StoredHead& head, const float* p, int group, int64_t first, int64_t n_keys,
               float* out) {
  for (int h = 0; h < group; h += kHeadsPerPass) {
    const float* ph = p + h * n_keys;
    float* oh = out + h * head.head_dim;
    if (h + 1 < group) {
      value_sum_heads<Half, true>(head, ph, first, n_keys, oh);
    } else {
      value_sum_heads<Half, false>(head, ph, first, n_keys, oh);
    }
  }
}

#endif

}  // namespace

bool stored_attention_supported(gguf::GgmlType type, int64_t head_dim) {
  // cpu_has_avx2 is false where there is no x86 SIMD.
  return cpu_has_avx2() && (type == gguf::GgmlType::F32 || type == gguf::GgmlType::F16) &&
         head_dim > 0 && head_dim % kLanes == 0;
}

void stored_key_scores(const StoredHead& head, const float* q, int group, int64_t first,
                       int64_t n_keys, float scale, float* scores) {
  assert(stored_attention_supported(head.type, head.head_dim));
#ifdef SERVESCOPE_X86_SIMD
  if (head.type == gguf::GgmlType::F16) {
    key_scores<true>(head, q, group, first, n_keys, scale, scores);
  } else {
    key_scores<false>(head, q, group, first, n_keys, scale, scores);
  }
#else
  (void)head, (void)q, (void)group, (void)first, (void)n_keys, (void)scale, (void)scores;
#endif
}

void stored_value_sum(const StoredHead& head, const float* p, int group, int64_t first,
                      int64_t n_keys, float* out) {
  assert(stored_attention_supported(head.type, head.head_dim));
#ifdef SERVESCOPE_X86_SIMD
  if (head.type == gguf::GgmlType::F16) {
    value_sum<true>(head, p, group, first, n_keys, out);
  } else {
    value_sum<false>(head, p, group, first, n_keys, out);
  }
#else
  (void)head, (void)p, (void)group, (void)first, (void)n_keys, (void)out;
#endif
}

}  // namespace servescope::compute
