#include "engine/compute/cpu_block_dot.h"

#include <array>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SERVESCOPE_X86_SIMD 1
#endif

namespace servescope::compute {
namespace {

using gguf::BlockQ4_0;
using gguf::BlockQ8_0;
using gguf::kQuantBlock;

// Every half-precision value as float: one table look-up instead of bit manipulation per
// element (the build targets CPUs without F16C too).
const float* fp16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(1 << 16);
    for (uint32_t h = 0; h < t.size(); ++h) t[h] = gguf::fp16_to_fp32(static_cast<uint16_t>(h));
    return t;
  }();
  return table.data();
}

// Eight independent partial sums: without -ffast-math the compiler may not reorder one
// running float sum, but it maps eight separate ones onto SIMD lanes.
constexpr int kLanes = 8;
using Lanes = std::array<float, kLanes>;

// The portable build targets baseline x86-64 (SSE2); where the CPU has AVX2 and FMA, the
// loader picks a clone compiled for them (GCC/clang function multi-versioning).
#if defined(__x86_64__) && defined(__GNUC__)
#define SERVESCOPE_SIMD_CLONES __attribute__((target_clones("arch=haswell", "default")))
#else
#define SERVESCOPE_SIMD_CLONES
#endif

float horizontal_sum(const Lanes& lanes) {
  float sum = 0.0f;
  for (const float v : lanes) sum += v;
  return sum;
}

SERVESCOPE_SIMD_CLONES
float dot_f32(const uint8_t* row, const float* x, int64_t n) {
  const auto* w = reinterpret_cast<const float*>(row);
  Lanes acc{};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += w[j + l] * x[j + l];
  }
  for (; j < n; ++j) acc[0] += w[j] * x[j];
  return horizontal_sum(acc);
}

SERVESCOPE_SIMD_CLONES
float dot_f16(const uint8_t* row, const float* x, int64_t n) {
  const float* table = fp16_table();
  Lanes acc{};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    uint16_t h[kLanes];
    std::memcpy(h, row + 2 * j, sizeof h);
    for (int l = 0; l < kLanes; ++l) acc[l] += table[h[l]] * x[j + l];
  }
  for (; j < n; ++j) {
    uint16_t h;
    std::memcpy(&h, row + 2 * j, sizeof h);
    acc[0] += table[h] * x[j];
  }
  return horizontal_sum(acc);
}

// Q8_0 and Q4_0 rows hold whole blocks of 32 (checked at load time).
SERVESCOPE_SIMD_CLONES
float dot_q8_0(const uint8_t* row, const float* x, int64_t n) {
  const float* table = fp16_table();
  Lanes acc{};
  for (int64_t b = 0; b < n / kQuantBlock; ++b) {
    BlockQ8_0 block;
    std::memcpy(&block, row + b * static_cast<int64_t>(sizeof block), sizeof block);
    const float* xb = x + b * kQuantBlock;
    float weights[kQuantBlock];  // converting first lets the compiler vectorise both loops
    for (int j = 0; j < kQuantBlock; ++j) weights[j] = static_cast<float>(block.qs[j]);
    Lanes block_sum{};
    for (int j = 0; j < kQuantBlock; j += kLanes) {
      for (int l = 0; l < kLanes; ++l) block_sum[l] += weights[j + l] * xb[j + l];
    }
    const float d = table[block.d];
    for (int l = 0; l < kLanes; ++l) acc[l] += d * block_sum[l];
  }
  return horizontal_sum(acc);
}

SERVESCOPE_SIMD_CLONES
float dot_q4_0(const uint8_t* row, const float* x, int64_t n) {
  constexpr int kHalf = kQuantBlock / 2;
  const float* table = fp16_table();
  Lanes acc{};
  for (int64_t b = 0; b < n / kQuantBlock; ++b) {
    BlockQ4_0 block;
    std::memcpy(&block, row + b * static_cast<int64_t>(sizeof block), sizeof block);
    const float* xb = x + b * kQuantBlock;
    float weights[kQuantBlock];  // low nibbles are elements 0..15, high nibbles 16..31
    for (int j = 0; j < kHalf; ++j) {
      weights[j] = static_cast<float>((block.qs[j] & 0x0F) - 8);
      weights[j + kHalf] = static_cast<float>((block.qs[j] >> 4) - 8);
    }
    Lanes block_sum{};
    for (int j = 0; j < kQuantBlock; j += kLanes) {
      for (int l = 0; l < kLanes; ++l) block_sum[l] += weights[j + l] * xb[j + l];
    }
    const float d = table[block.d];
    for (int l = 0; l < kLanes; ++l) acc[l] += d * block_sum[l];
  }
  return horizontal_sum(acc);
}

#ifdef SERVESCOPE_X86_SIMD
// Hand-written AVX2 versions of the block types: the compiler's vectorisation of the loops
// above goes through a stack copy of the converted weights and spends about 1.8 instructions
// per weight in decode (callgrind); converting in registers takes about a third of that.
// Lane l of a block's sum holds elements l, l + 8, l + 16, l + 24, as in the portable code.
#define SERVESCOPE_AVX2 __attribute__((target("avx2,fma,f16c")))

SERVESCOPE_AVX2 float horizontal_sum(__m256 v) {
  alignas(32) float lanes[kLanes];
  _mm256_store_ps(lanes, v);
  float sum = 0.0f;
  for (const float lane : lanes) sum += lane;
  return sum;
}

// Eight signed bytes -> eight floats.
SERVESCOPE_AVX2 __m256 int8x8_to_float(__m128i bytes) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes));
}

SERVESCOPE_AVX2 float block_scale(const uint8_t* block) {
  uint16_t d;
  std::memcpy(&d, block, sizeof d);
  return _cvtsh_ss(d);
}

SERVESCOPE_AVX2 float dot_f16_avx2(const uint8_t* row, const float* x, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    const __m128i halves = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * j));
    acc = _mm256_fmadd_ps(_mm256_cvtph_ps(halves), _mm256_loadu_ps(x + j), acc);
  }
  float sum = horizontal_sum(acc);
  for (; j < n; ++j) {
    uint16_t h;
    std::memcpy(&h, row + 2 * j, sizeof h);
    sum += _cvtsh_ss(h) * x[j];
  }
  return sum;
}

SERVESCOPE_AVX2 float dot_q8_0_avx2(const uint8_t* row, const float* x, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQuantBlock; ++b) {
    const uint8_t* block = row + b * static_cast<int64_t>(sizeof(BlockQ8_0));
    const uint8_t* qs = block + offsetof(BlockQ8_0, qs);
    const float* xb = x + b * kQuantBlock;
    __m256 sum = _mm256_setzero_ps();
    for (int g = 0; g < kQuantBlock; g += kLanes) {
      const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + g));
      sum = _mm256_fmadd_ps(int8x8_to_float(q), _mm256_loadu_ps(xb + g), sum);
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(block_scale(block)), sum, acc);
  }
  return horizontal_sum(acc);
}

SERVESCOPE_AVX2 float dot_q4_0_avx2(const uint8_t* row, const float* x, int64_t n) {
  const __m128i low_nibbles = _mm_set1_epi8(0x0F);
  const __m128i eight = _mm_set1_epi8(8);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQuantBlock; ++b) {
    const uint8_t* block = row + b * static_cast<int64_t>(sizeof(BlockQ4_0));
    const __m128i packed =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + offsetof(BlockQ4_0, qs)));
    // Low nibbles are elements 0..15, high nibbles 16..31; both stored with +8.
    const __m128i first = _mm_sub_epi8(_mm_and_si128(packed, low_nibbles), eight);
    const __m128i second =
        _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(packed, 4), low_nibbles), eight);
    const float* xb = x + b * kQuantBlock;
    __m256 sum = _mm256_mul_ps(int8x8_to_float(first), _mm256_loadu_ps(xb));
    sum = _mm256_fmadd_ps(int8x8_to_float(_mm_srli_si128(first, 8)), _mm256_loadu_ps(xb + 8), sum);
    sum = _mm256_fmadd_ps(int8x8_to_float(second), _mm256_loadu_ps(xb + 16), sum);
    sum =
        _mm256_fmadd_ps(int8x8_to_float(_mm_srli_si128(second, 8)), _mm256_loadu_ps(xb + 24), sum);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(block_scale(block)), sum, acc);
  }
  return horizontal_sum(acc);
}

SERVESCOPE_AVX2 void f16_to_float_avx2(const uint8_t* src, float* dst, int64_t n) {
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    const __m128i halves = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * j));
    _mm256_storeu_ps(dst + j, _mm256_cvtph_ps(halves));
  }
  for (; j < n; ++j) {
    uint16_t h;
    std::memcpy(&h, src + 2 * j, sizeof h);
    dst[j] = _cvtsh_ss(h);
  }
}

bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c");
  return has;
}
#endif

// One kernel per type, chosen once for this CPU.
struct RowDots {
  RowDot f32, f16, q8_0, q4_0;
};

const RowDots& row_dots() {
  static const RowDots dots = [] {
#ifdef SERVESCOPE_X86_SIMD
    if (cpu_has_avx2()) return RowDots{dot_f32, dot_f16_avx2, dot_q8_0_avx2, dot_q4_0_avx2};
#endif
    return RowDots{dot_f32, dot_f16, dot_q8_0, dot_q4_0};
  }();
  return dots;
}

}  // namespace

RowDot row_dot_for(gguf::GgmlType type) {
  const RowDots& dots = row_dots();
  switch (type) {
    case gguf::GgmlType::F32:
      return dots.f32;
    case gguf::GgmlType::F16:
      return dots.f16;
    case gguf::GgmlType::Q8_0:
      return dots.q8_0;
    case gguf::GgmlType::Q4_0:
      return dots.q4_0;
    default:
      break;
  }
  // Weights are checked at load time, so another type here is a programming error.
  std::abort();
}

void dequantize_row_fast(gguf::GgmlType type, const uint8_t* row, float* dst, int64_t n) {
#ifdef SERVESCOPE_X86_SIMD
  if (type == gguf::GgmlType::F16 && cpu_has_avx2()) {
    f16_to_float_avx2(row, dst, n);
    return;
  }
#endif
  gguf::dequantize_row(type, row, dst, n);
}

}  // namespace servescope::compute
