#include "engine/compute/cpu_block_dot.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <vector>

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

}  // namespace

float dot_row(gguf::GgmlType type, const uint8_t* row, const float* x, int64_t n) {
  switch (type) {
    case gguf::GgmlType::F32: return dot_f32(row, x, n);
    case gguf::GgmlType::F16: return dot_f16(row, x, n);
    case gguf::GgmlType::Q8_0: return dot_q8_0(row, x, n);
    case gguf::GgmlType::Q4_0: return dot_q4_0(row, x, n);
    default: break;
  }
  // Weights are checked at load time, so another type here is a programming error.
  std::abort();
}

}  // namespace servescope::compute
