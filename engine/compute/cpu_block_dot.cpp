#include "engine/compute/cpu_block_dot.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine/compute/cpu_features.h"
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

// The types without a kernel here (BF16; Q4_1, Q5_0, Q5_1 and the K-quants where the CPU lacks
// AVX2 and FMA, else cpu_kquant_dot.cpp serves them): dequantise a
// chunk of the row with GGML's formula (gguf::dequantize_row) into a buffer on the stack, then
// take the float32 dot product. Slower than the fused kernels, but exactly the values the file
// holds.
template <gguf::GgmlType Type>
float dot_dequantised(const uint8_t* row, const float* x, int64_t n) {
  constexpr int64_t kChunk = gguf::kSuperBlock;  // whole blocks of every type
  const int64_t chunk_bytes = kChunk / gguf::block_elements(Type) * gguf::block_bytes(Type);
  float weights[kChunk];
  float sum = 0.0f;
  for (int64_t j = 0; j < n; j += kChunk) {
    const int64_t len = std::min(kChunk, n - j);
    gguf::dequantize_row(Type, row + j / kChunk * chunk_bytes, weights, len);
    sum += dot_f32(reinterpret_cast<const uint8_t*>(weights), x + j, len);
  }
  return sum;
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

// The same value from the half-precision table (fp16_table: exact conversions too): in the dot
// kernels a scalar load that the broadcast then reads from memory, where a conversion and a
// register broadcast would take two more slots of the shuffle port the weights' unpacking needs.
inline float block_scale(const float* table, const uint8_t* block) {
  uint16_t d;
  std::memcpy(&d, block, sizeof d);
  return table[d];
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

// Round to nearest even, as gguf::fp32_to_fp16 does; infinities and NaNs stay what they are.
SERVESCOPE_AVX2 void float_to_f16_avx2(const float* src, uint8_t* dst, int64_t n) {
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    const __m128i halves = _mm256_cvtps_ph(_mm256_loadu_ps(src + j), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * j), halves);
  }
  for (; j < n; ++j) {
    const uint16_t h = gguf::fp32_to_fp16(src[j]);
    std::memcpy(dst + 2 * j, &h, sizeof h);
  }
}

// Several tokens against one weight row: the row's values are converted once per group of
// kGroup tokens and stay in registers while every token's activations stream past. Each token's
// sum is taken exactly as the one-token form takes it (same lanes, same order).
constexpr int kGroup = 4;

template <int T>
SERVESCOPE_AVX2 void dot_f32_group(const uint8_t* row, const float* x, int64_t x_stride, int64_t n,
                                   float* out, int64_t out_stride) {
  const auto* w = reinterpret_cast<const float*>(row);
  __m256 even[T];  // elements 16i .. 16i+7
  __m256 odd[T];   // elements 16i+8 .. 16i+15: two chains hide the FMA latency
  for (int t = 0; t < T; ++t) even[t] = odd[t] = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 2 * kLanes <= n; j += 2 * kLanes) {
    const __m256 w0 = _mm256_loadu_ps(w + j);
    const __m256 w1 = _mm256_loadu_ps(w + j + kLanes);
    for (int t = 0; t < T; ++t) {
      const float* xt = x + t * x_stride + j;
      even[t] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xt), even[t]);
      odd[t] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xt + kLanes), odd[t]);
    }
  }
  if (j + kLanes <= n) {
    const __m256 w0 = _mm256_loadu_ps(w + j);
    for (int t = 0; t < T; ++t) {
      even[t] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + t * x_stride + j), even[t]);
    }
    j += kLanes;
  }
  for (int t = 0; t < T; ++t) {
    float sum = horizontal_sum(_mm256_add_ps(even[t], odd[t]));
    for (int64_t k = j; k < n; ++k) sum += w[k] * x[t * x_stride + k];
    out[t * out_stride] = sum;
  }
}

template <int T>
SERVESCOPE_AVX2 void dot_f16_group(const uint8_t* row, const float* x, int64_t x_stride, int64_t n,
                                   float* out, int64_t out_stride) {
  __m256 even[T];
  __m256 odd[T];
  for (int t = 0; t < T; ++t) even[t] = odd[t] = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 2 * kLanes <= n; j += 2 * kLanes) {
    const __m256 w0 =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * j)));
    const __m256 w1 =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * (j + kLanes))));
    for (int t = 0; t < T; ++t) {
      const float* xt = x + t * x_stride + j;
      even[t] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xt), even[t]);
      odd[t] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xt + kLanes), odd[t]);
    }
  }
  if (j + kLanes <= n) {
    const __m256 w0 =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * j)));
    for (int t = 0; t < T; ++t) {
      even[t] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + t * x_stride + j), even[t]);
    }
    j += kLanes;
  }
  for (int t = 0; t < T; ++t) {
    float sum = horizontal_sum(_mm256_add_ps(even[t], odd[t]));
    for (int64_t k = j; k < n; ++k) {
      uint16_t h;
      std::memcpy(&h, row + 2 * k, sizeof h);
      sum += _cvtsh_ss(h) * x[t * x_stride + k];
    }
    out[t * out_stride] = sum;
  }
}

// A block's 32 weights as four registers of floats.
struct UnpackQ8_0 {
  static constexpr size_t kBlockBytes = sizeof(BlockQ8_0);
  SERVESCOPE_AVX2 static void unpack(const uint8_t* block, __m256 (&w)[4]) {
    const uint8_t* qs = block + offsetof(BlockQ8_0, qs);
    for (int g = 0; g < 4; ++g) {
      w[g] = int8x8_to_float(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + g * kLanes)));
    }
  }
};
struct UnpackQ4_0 {
  static constexpr size_t kBlockBytes = sizeof(BlockQ4_0);
  SERVESCOPE_AVX2 static void unpack(const uint8_t* block, __m256 (&w)[4]) {
    const __m128i low_nibbles = _mm_set1_epi8(0x0F);
    const __m128i eight = _mm_set1_epi8(8);
    const __m128i packed =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + offsetof(BlockQ4_0, qs)));
    // Low nibbles are elements 0..15, high nibbles 16..31; both stored with +8.
    const __m128i first = _mm_sub_epi8(_mm_and_si128(packed, low_nibbles), eight);
    const __m128i second =
        _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(packed, 4), low_nibbles), eight);
    w[0] = int8x8_to_float(first);
    w[1] = int8x8_to_float(_mm_srli_si128(first, 8));
    w[2] = int8x8_to_float(second);
    w[3] = int8x8_to_float(_mm_srli_si128(second, 8));
  }
};

// Dequantises whole blocks: each element is float(q) * d, as gguf::dequantize_row computes it
// (one rounding, so the result is the same bit for bit), eight lanes at a time. Prefill's
// exact path writes every weight tile this way before its sgemm.
template <class Unpack>
SERVESCOPE_AVX2 void dequantize_blocks_avx2(const uint8_t* row, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQuantBlock; ++b) {
    const uint8_t* block = row + b * static_cast<int64_t>(Unpack::kBlockBytes);
    __m256 w[4];
    Unpack::unpack(block, w);
    const __m256 d = _mm256_set1_ps(block_scale(block));
    for (int g = 0; g < 4; ++g)
      _mm256_storeu_ps(dst + b * kQuantBlock + g * kLanes, _mm256_mul_ps(w[g], d));
  }
}

using GroupKernel = void (*)(const uint8_t*, const float*, int64_t, int64_t, float*, int64_t);
using FourRowsKernel = void (*)(const uint8_t*, uint64_t, const float*, int64_t, float*);

// Many rows against many tokens: groups of G tokens row by row (each row read once per group);
// the tokens left over (a lone decode token) four rows at a time, then row by row.
template <int G, GroupKernel Group, FourRowsKernel FourRows, GroupKernel Single>
void dot_rows_in_groups(const uint8_t* rows, uint64_t row_stride, int64_t n_rows, const float* x,
                        int64_t x_stride, int64_t tokens, int64_t n, float* out,
                        int64_t out_stride) {
  int64_t t = 0;
  for (; t + G <= tokens; t += G) {
    for (int64_t r = 0; r < n_rows; ++r) {
      Group(rows + r * row_stride, x + t * x_stride, x_stride, n, out + t * out_stride + r,
            out_stride);
    }
  }
  for (; t < tokens; ++t) {
    const float* xt = x + t * x_stride;
    float* ot = out + t * out_stride;
    int64_t r = 0;
    for (; r + 4 <= n_rows; r += 4) FourRows(rows + r * row_stride, row_stride, xt, n, ot + r);
    for (; r < n_rows; ++r) Single(rows + r * row_stride, xt, 0, n, ot + r, 0);
  }
}

// Q8_0's and Q4_0's exact kernels: lane l of 16 sums elements l and l + 16 of a block (a
// product, then an FMA), then adds block scale x that into the lane's total by an FMA; the 16
// totals are added as lane l + lane l + 8, then the eight in order (horizontal_sum). AVX2 holds
// lanes 0-7 and 8-15 in two registers; AVX-512 in one, widening a row's 16 bytes (Q8_0: elements
// 0..15 and 16..31; Q4_0: both nibbles of each) straight from memory, one row or token per
// register. Every kernel of a type takes these steps, so every variant gives a token the same
// bits; block scales are broadcast from the half-precision table (loads, not conversions on the
// shuffle port). A lone token's kernels fetch the next row group's blocks ahead: a decode reads
// its weights from beyond L2.
template <class Unpack, int R, int T>
SERVESCOPE_AVX2 void dot_quant_tile(const uint8_t* rows, uint64_t row_stride, const float* x,
                                    int64_t x_stride, int64_t n, float* out, int64_t out_stride) {
  const float* table = fp16_table();
  __m256 acc[R][T][2];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t][0] = acc[r][t][1] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < n / kQuantBlock; ++b) {
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const uint8_t* block = rows + r * row_stride + b * static_cast<int64_t>(Unpack::kBlockBytes);
      if constexpr (R > 1) {
        _mm_prefetch(reinterpret_cast<const char*>(block + R * row_stride), _MM_HINT_T0);
      }
      __m256 w[4];  // elements 0..7, 8..15, 16..23, 24..31
      Unpack::unpack(block, w);
      const __m256 d = _mm256_set1_ps(block_scale(table, block));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const float* xb = x + t * x_stride + b * kQuantBlock;
        for (int h = 0; h < 2; ++h) {
          __m256 sum = _mm256_mul_ps(w[h], _mm256_loadu_ps(xb + h * kLanes));
          sum = _mm256_fmadd_ps(w[h + 2], _mm256_loadu_ps(xb + (h + 2) * kLanes), sum);
          acc[r][t][h] = _mm256_fmadd_ps(d, sum, acc[r][t][h]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      out[t * out_stride + r] = horizontal_sum(_mm256_add_ps(acc[r][t][0], acc[r][t][1]));
    }
  }
}

template <class Unpack, int T>
SERVESCOPE_AVX2 void dot_quant_group(const uint8_t* row, const float* x, int64_t x_stride,
                                     int64_t n, float* out, int64_t out_stride) {
  dot_quant_tile<Unpack, 1, T>(row, 0, x, x_stride, n, out, out_stride);
}
template <class Unpack>
SERVESCOPE_AVX2 void dot_quant_4rows(const uint8_t* rows, uint64_t row_stride, const float* x,
                                     int64_t n, float* out) {
  dot_quant_tile<Unpack, 4, 1>(rows, row_stride, x, 0, n, out, 0);
}
template <class Unpack>
constexpr auto dot_quant_rows =
    dot_rows_in_groups<kGroup, dot_quant_group<Unpack, kGroup>, dot_quant_4rows<Unpack>,
                       dot_quant_group<Unpack, 1>>;

#define SERVESCOPE_AVX512_QUANT __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// A block's elements 0..15 and 16..31 as two registers of floats.
struct WidenQ8_0 {
  static constexpr size_t kBlockBytes = sizeof(BlockQ8_0);
  SERVESCOPE_AVX512_QUANT static void widen(const uint8_t* block, __m512& low, __m512& high) {
    const uint8_t* qs = block + offsetof(BlockQ8_0, qs);
    low = _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs))));
    high = _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + 16))));
  }
};
struct WidenQ4_0 {
  static constexpr size_t kBlockBytes = sizeof(BlockQ4_0);
  SERVESCOPE_AVX512_QUANT static void widen(const uint8_t* block, __m512& low, __m512& high) {
    // float(i - 8) at index i: the permute reads only an index's low four bits, the low nibble.
    const __m512 table = _mm512_setr_ps(-8.0f, -7.0f, -6.0f, -5.0f, -4.0f, -3.0f, -2.0f, -1.0f,
                                        0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f);
    const __m512i bytes = _mm512_cvtepu8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + offsetof(BlockQ4_0, qs))));
    low = _mm512_permutexvar_ps(bytes, table);
    high = _mm512_permutexvar_ps(_mm512_srli_epi32(bytes, 4), table);
  }
};

template <class Widen, int R, int T>
SERVESCOPE_AVX512_QUANT void dot_quant_tile_avx512(const uint8_t* rows, uint64_t row_stride,
                                                   const float* x, int64_t x_stride, int64_t n,
                                                   float* out, int64_t out_stride) {
  const float* table = fp16_table();
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < n / kQuantBlock; ++b) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const uint8_t* block = rows + r * row_stride + b * static_cast<int64_t>(Widen::kBlockBytes);
      if constexpr (R > 1) {
        _mm_prefetch(reinterpret_cast<const char*>(block + R * row_stride), _MM_HINT_T0);
      }
      __m512 low;
      __m512 high;
      Widen::widen(block, low, high);
      const __m512 d = _mm512_set1_ps(block_scale(table, block));
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const float* xb = x + t * x_stride + b * kQuantBlock;
        __m512 sum = _mm512_mul_ps(low, _mm512_loadu_ps(xb));
        sum = _mm512_fmadd_ps(high, _mm512_loadu_ps(xb + 16), sum);
        acc[r][t] = _mm512_fmadd_ps(d, sum, acc[r][t]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      const __m256 upper = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[r][t]), 1));
      out[t * out_stride + r] =
          horizontal_sum(_mm256_add_ps(_mm512_castps512_ps256(acc[r][t]), upper));
    }
  }
}
#pragma GCC diagnostic pop

// Groups of eight tokens row by row, then of four; each token left over eight rows at a time.
template <class Widen>
void dot_quant_rows_avx512(const uint8_t* rows, uint64_t row_stride, int64_t n_rows, const float* x,
                           int64_t x_stride, int64_t tokens, int64_t n, float* out,
                           int64_t out_stride) {
  constexpr int64_t kEight = 8;
  const int64_t eights = tokens / kEight * kEight;
  for (int64_t t = 0; t < eights; t += kEight) {
    for (int64_t r = 0; r < n_rows; ++r) {
      dot_quant_tile_avx512<Widen, 1, kEight>(rows + r * row_stride, 0, x + t * x_stride, x_stride,
                                              n, out + t * out_stride + r, out_stride);
    }
  }
  const int64_t fours = eights + (tokens - eights) / kGroup * kGroup;
  for (int64_t t = eights; t < fours; t += kGroup) {
    for (int64_t r = 0; r < n_rows; ++r) {
      dot_quant_tile_avx512<Widen, 1, kGroup>(rows + r * row_stride, 0, x + t * x_stride, x_stride,
                                              n, out + t * out_stride + r, out_stride);
    }
  }
  for (int64_t t = fours; t < tokens; ++t) {
    const float* xt = x + t * x_stride;
    float* ot = out + t * out_stride;
    int64_t r = 0;
    for (; r + 8 <= n_rows; r += 8) {
      dot_quant_tile_avx512<Widen, 8, 1>(rows + r * row_stride, row_stride, xt, 0, n, ot + r, 0);
    }
    for (; r < n_rows; ++r) {
      dot_quant_tile_avx512<Widen, 1, 1>(rows + r * row_stride, 0, xt, 0, n, ot + r, 0);
    }
  }
}

// Groups of G tokens, then one at a time.
template <int G, GroupKernel Group, GroupKernel Single>
void dot_tokens_in_groups(const uint8_t* row, const float* x, int64_t x_stride, int64_t tokens,
                          int64_t n, float* out, int64_t out_stride) {
  int64_t t = 0;
  for (; t + G <= tokens; t += G) {
    Group(row, x + t * x_stride, x_stride, n, out + t * out_stride, out_stride);
  }
  for (; t < tokens; ++t) Single(row, x + t * x_stride, x_stride, n, out + t * out_stride, 0);
}

// A group kernel for one token, as a RowDot.
template <GroupKernel Single>
float dot_one_token(const uint8_t* row, const float* x, int64_t n) {
  float out;
  Single(row, x, 0, n, &out, 0);
  return out;
}

#endif

// Without AVX2: the one-token kernel per token (the row stays in cache between tokens).
template <RowDot Dot>
void dot_tokens_one_by_one(const uint8_t* row, const float* x, int64_t x_stride, int64_t tokens,
                           int64_t n, float* out, int64_t out_stride) {
  for (int64_t t = 0; t < tokens; ++t) out[t * out_stride] = Dot(row, x + t * x_stride, n);
}

// One kernel per type, chosen once for this CPU.
struct RowDots {
  RowDot f32, f16, q8_0, q4_0;
};

struct RowDotsTokens {
  RowDotTokens f32, f16, q8_0, q4_0;
};

const RowDotsTokens& row_dots_tokens() {
  static const RowDotsTokens dots = [] {
#ifdef SERVESCOPE_X86_SIMD
    if (cpu_has_avx2()) {
      RowDotsTokens avx2{dot_tokens_in_groups<kGroup, dot_f32_group<kGroup>, dot_f32_group<1>>,
                         dot_tokens_in_groups<kGroup, dot_f16_group<kGroup>, dot_f16_group<1>>,
                         dot_tokens_in_groups<kGroup, dot_quant_group<UnpackQ8_0, kGroup>,
                                              dot_quant_group<UnpackQ8_0, 1>>,
                         dot_tokens_in_groups<kGroup, dot_quant_group<UnpackQ4_0, kGroup>,
                                              dot_quant_group<UnpackQ4_0, 1>>};
      return avx2;
    }
#endif
    return RowDotsTokens{dot_tokens_one_by_one<dot_f32>, dot_tokens_one_by_one<dot_f16>,
                         dot_tokens_one_by_one<dot_q8_0>, dot_tokens_one_by_one<dot_q4_0>};
  }();
  return dots;
}

const RowDots& row_dots() {
  static const RowDots dots = [] {
#ifdef SERVESCOPE_X86_SIMD
    if (cpu_has_avx2()) {
      return RowDots{dot_f32, dot_one_token<dot_f16_group<1>>,
                     dot_one_token<dot_quant_group<UnpackQ8_0, 1>>,
                     dot_one_token<dot_quant_group<UnpackQ4_0, 1>>};
    }
#endif
    return RowDots{dot_f32, dot_f16, dot_q8_0, dot_q4_0};
  }();
  return dots;
}

// The kernel of `type` from a table of kernels (RowDots or RowDotsTokens).
template <class Kernels>
auto kernel_for(const Kernels& kernels, gguf::GgmlType type) {
  switch (type) {
    case gguf::GgmlType::F32:
      return kernels.f32;
    case gguf::GgmlType::F16:
      return kernels.f16;
    case gguf::GgmlType::Q8_0:
      return kernels.q8_0;
    case gguf::GgmlType::Q4_0:
      return kernels.q4_0;
    default:
      break;
  }
  // Weights are checked at load time, so another type here is a programming error.
  std::abort();
}

// The kernels of a type dot_dequantised serves.
struct DequantisingKernels {
  RowDot dot = nullptr;  // null: the type has fused kernels (row_dots)
  RowDotTokens dot_tokens = nullptr;
};

template <gguf::GgmlType Type>
DequantisingKernels dequantising_kernels() {
  return {dot_dequantised<Type>, dot_tokens_one_by_one<dot_dequantised<Type>>};
}

DequantisingKernels dequantising_kernels_for(gguf::GgmlType type) {
  switch (type) {
    case gguf::GgmlType::BF16:
      return dequantising_kernels<gguf::GgmlType::BF16>();
    case gguf::GgmlType::Q4_1:
      return dequantising_kernels<gguf::GgmlType::Q4_1>();
    case gguf::GgmlType::Q5_0:
      return dequantising_kernels<gguf::GgmlType::Q5_0>();
    case gguf::GgmlType::Q5_1:
      return dequantising_kernels<gguf::GgmlType::Q5_1>();
    case gguf::GgmlType::Q2_K:
      return dequantising_kernels<gguf::GgmlType::Q2_K>();
    case gguf::GgmlType::Q3_K:
      return dequantising_kernels<gguf::GgmlType::Q3_K>();
    case gguf::GgmlType::Q4_K:
      return dequantising_kernels<gguf::GgmlType::Q4_K>();
    case gguf::GgmlType::Q5_K:
      return dequantising_kernels<gguf::GgmlType::Q5_K>();
    case gguf::GgmlType::Q6_K:
      return dequantising_kernels<gguf::GgmlType::Q6_K>();
    default:
      return {};
  }
}

}  // namespace

RowDot row_dot_for(gguf::GgmlType type) {
  if (const RowDot dot = kquant_kernels_for(type).dot) return dot;
  if (const RowDot dot = dequantising_kernels_for(type).dot) return dot;
  return kernel_for(row_dots(), type);
}

RowDotTokens row_dot_tokens_for(gguf::GgmlType type) {
  if (const RowDotTokens dot = kquant_kernels_for(type).dot_tokens) return dot;
  if (const RowDotTokens dot = dequantising_kernels_for(type).dot_tokens) return dot;
  return kernel_for(row_dots_tokens(), type);
}

RowsDotTokens rows_dot_tokens_for(gguf::GgmlType type) {
  if (const RowsDotTokens dot = kquant_kernels_for(type).dot_rows) return dot;
#ifdef SERVESCOPE_X86_SIMD
  if (type == gguf::GgmlType::Q8_0 || type == gguf::GgmlType::Q4_0) {
    // The last variant is the widest this CPU runs; picked once per type.
    const auto last = [](gguf::GgmlType t) -> RowsDotTokens {
      const std::vector<RowsDotTokens> variants = quant_rows_kernel_variants(t);
      return variants.empty() ? nullptr : variants.back();
    };
    static const RowsDotTokens q8 = last(gguf::GgmlType::Q8_0);
    static const RowsDotTokens q4 = last(gguf::GgmlType::Q4_0);
    return type == gguf::GgmlType::Q8_0 ? q8 : q4;
  }
#endif
  (void)type;
  return nullptr;
}

std::vector<RowsDotTokens> quant_rows_kernel_variants(gguf::GgmlType type) {
  std::vector<RowsDotTokens> variants;
#ifdef SERVESCOPE_X86_SIMD
  const bool q8 = type == gguf::GgmlType::Q8_0;
  if ((q8 || type == gguf::GgmlType::Q4_0) && cpu_has_avx2()) {
    variants.push_back(q8 ? dot_quant_rows<UnpackQ8_0> : dot_quant_rows<UnpackQ4_0>);
    if (cpu_has_avx512_bw()) {
      variants.push_back(q8 ? dot_quant_rows_avx512<WidenQ8_0> : dot_quant_rows_avx512<WidenQ4_0>);
    }
  }
#endif
  (void)type;
  return variants;
}

const float* fp16_to_float_table() { return fp16_table(); }

void dequantize_row_fast(gguf::GgmlType type, const uint8_t* row, float* dst, int64_t n) {
  if (const auto dequantize = kquant_kernels_for(type).dequantize;
      dequantize != nullptr && n % gguf::block_elements(type) == 0) {
    dequantize(row, dst, n);
    return;
  }
#ifdef SERVESCOPE_X86_SIMD
  if (type == gguf::GgmlType::F16 && cpu_has_avx2()) {
    f16_to_float_avx2(row, dst, n);
    return;
  }
  if (type == gguf::GgmlType::Q8_0 && n % kQuantBlock == 0 && cpu_has_avx2()) {
    dequantize_blocks_avx2<UnpackQ8_0>(row, dst, n);
    return;
  }
  if (type == gguf::GgmlType::Q4_0 && n % kQuantBlock == 0 && cpu_has_avx2()) {
    dequantize_blocks_avx2<UnpackQ4_0>(row, dst, n);
    return;
  }
#endif
  gguf::dequantize_row(type, row, dst, n);
}

void quantize_row_fast(gguf::GgmlType type, const float* src, uint8_t* row, int64_t n) {
#ifdef SERVESCOPE_X86_SIMD
  if (type == gguf::GgmlType::F16 && cpu_has_avx2()) {
    float_to_f16_avx2(src, row, n);
    return;
  }
#endif
  gguf::quantize_row(type, src, row, n);
}

}  // namespace servescope::compute
