#include "engine/compute/cpu_q4_interleaved.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/compute/cpu_block_dot.h"
#include "engine/gguf/ggml_types.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SERVESCOPE_X86_SIMD 1
#define SERVESCOPE_AVX2 __attribute__((target("avx2,fma,f16c")))
#define SERVESCOPE_AVX512_VNNI \
  __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")))
#endif

namespace servescope::compute {
namespace {

using gguf::kQuantBlock;

// GGML's Q4_0 block: an fp16 scale and 16 bytes of nibbles.
constexpr int64_t kQ4Bytes = 18;

const InterleavedQ4Block* group_blocks(const uint8_t* packed, int64_t blocks, int64_t group) {
  return reinterpret_cast<const InterleavedQ4Block*>(packed) + group * blocks;
}

// The integer dot of a row's block with a token's: sum of nibble x q, plus the token's offset.
int32_t block_dot(const InterleavedQ4Block& block, int lane, const ActivationBlock& x,
                  int32_t offset) {
  int32_t sum = offset;
  for (int c = 0; c < 4; ++c) {
    for (int k = 0; k < 4; ++k) {
      const uint8_t byte = block.qs[c][lane][k];
      sum += (byte & 0x0F) * x.qs[4 * c + k] + (byte >> 4) * x.qs[16 + 4 * c + k];
    }
  }
  return sum;
}

void product_portable(const uint8_t* packed, int64_t cols, int64_t first_row, int64_t end_row,
                      const ActivationBlock* x, const int32_t* x_offsets, int64_t tokens,
                      float* out, int64_t out_stride) {
  const int64_t blocks = cols / kQuantBlock;
  const float* half_to_float = fp16_to_float_table();
  for (int64_t r = first_row; r < end_row; ++r) {
    const InterleavedQ4Block* group = group_blocks(packed, blocks, r / kInterleavedRows);
    const auto lane = static_cast<int>(r % kInterleavedRows);
    for (int64_t t = 0; t < tokens; ++t) {
      float sum = 0.0f;
      for (int64_t b = 0; b < blocks; ++b) {
        const ActivationBlock& xb = x[t * blocks + b];
        const int32_t dot = block_dot(group[b], lane, xb, x_offsets[t * blocks + b]);
        const float scale = half_to_float[group[b].d[lane]] * xb.d;
        sum = std::fma(scale, static_cast<float>(dot), sum);
      }
      out[t * out_stride + r] = sum;
    }
  }
}

#ifdef SERVESCOPE_X86_SIMD

// GCC 12's AVX-512 intrinsics start from _mm512_undefined values, which its uninitialised-use
// warnings flag inside the header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// The token's four activations of group i (elements 4i..4i+3) in every 32-bit lane.
SERVESCOPE_AVX512_VNNI inline __m512i activations_of_group(const ActivationBlock& x, int i) {
  int32_t four;
  std::memcpy(&four, x.qs + 4 * i, sizeof four);
  return _mm512_set1_epi32(four);
}

// 16 rows (a whole group, or the first `valid`) against T tokens.
template <int T>
SERVESCOPE_AVX512_VNNI void group_avx512(const InterleavedQ4Block* group, int64_t blocks,
                                         const ActivationBlock* x, const int32_t* x_offsets,
                                         float* out, int64_t out_stride, __mmask16 valid) {
  const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const InterleavedQ4Block& block = group[b];
    // w[i]: elements 4i..4i+3 of the 16 rows (low nibbles of chunk i, then the high ones).
    __m512i w[8];
    for (int c = 0; c < 4; ++c) {
      const __m512i chunk = _mm512_loadu_si512(block.qs[c]);
      w[c] = _mm512_and_si512(chunk, low_nibbles);
      w[c + 4] = _mm512_and_si512(_mm512_srli_epi16(chunk, 4), low_nibbles);
    }
    const __m512 d_w =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.d)));
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const ActivationBlock& xb = x[t * blocks + b];
      // Two chains of four dots: integer sums, so splitting them changes nothing.
      __m512i even = _mm512_set1_epi32(x_offsets[t * blocks + b]);
      __m512i odd = _mm512_setzero_si512();
      for (int i = 0; i < 8; i += 2) {
        even = _mm512_dpbusd_epi32(even, w[i], activations_of_group(xb, i));
        odd = _mm512_dpbusd_epi32(odd, w[i + 1], activations_of_group(xb, i + 1));
      }
      const __m512 dot = _mm512_cvtepi32_ps(_mm512_add_epi32(even, odd));
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d_w, _mm512_set1_ps(xb.d)), dot, acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * out_stride, valid, acc[t]);
}

// Eight tokens at a time keep 8 sums and the block's 8 weight registers in 32 registers.
constexpr int kAvx512Tokens = 8;
using GroupKernel = void (*)(const InterleavedQ4Block*, int64_t, const ActivationBlock*,
                             const int32_t*, float*, int64_t, __mmask16);
constexpr GroupKernel kGroupKernels[kAvx512Tokens] = {
    nullptr,         group_avx512<1>, group_avx512<2>, group_avx512<3>,
    group_avx512<4>, group_avx512<5>, group_avx512<6>, group_avx512<7>};

SERVESCOPE_AVX512_VNNI void product_avx512(const uint8_t* packed, int64_t cols, int64_t first_row,
                                           int64_t end_row, const ActivationBlock* x,
                                           const int32_t* x_offsets, int64_t tokens, float* out,
                                           int64_t out_stride) {
  const int64_t blocks = cols / kQuantBlock;
  for (int64_t r = first_row; r < end_row; r += kInterleavedRows) {
    const InterleavedQ4Block* group = group_blocks(packed, blocks, r / kInterleavedRows);
    const int64_t rows_here = std::min(kInterleavedRows, end_row - r);
    const auto valid = static_cast<__mmask16>((1u << rows_here) - 1);
    int64_t t = 0;
    for (; t + kAvx512Tokens <= tokens; t += kAvx512Tokens) {
      group_avx512<kAvx512Tokens>(group, blocks, x + t * blocks, x_offsets + t * blocks,
                                  out + t * out_stride + r, out_stride, valid);
    }
    if (t < tokens) {  // the last 1..7 tokens
      kGroupKernels[tokens - t](group, blocks, x + t * blocks, x_offsets + t * blocks,
                                out + t * out_stride + r, out_stride, valid);
    }
  }
}

#pragma GCC diagnostic pop

// AVX2: the group's two halves of 8 rows in turn. Without a dpbusd instruction, pairs of nibble
// x activation products are summed in 16 bits (at most 2 x 15 x 127: no saturation) and then
// in 32.
SERVESCOPE_AVX2 inline __m256i dot_of_four(__m256i sum, __m256i w, __m256i q) {
  return _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(w, q), _mm256_set1_epi16(1)));
}

SERVESCOPE_AVX2 inline __m256i activations_of_group_avx2(const ActivationBlock& x, int i) {
  int32_t four;
  std::memcpy(&four, x.qs + 4 * i, sizeof four);
  return _mm256_set1_epi32(four);
}

template <int T>
SERVESCOPE_AVX2 void half_group_avx2(const InterleavedQ4Block* group, int64_t blocks, int half,
                                     const ActivationBlock* x, const int32_t* x_offsets, float* out,
                                     int64_t out_stride, int64_t valid) {
  const __m256i low_nibbles = _mm256_set1_epi8(0x0F);
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const InterleavedQ4Block& block = group[b];
    __m256i w[8];
    for (int c = 0; c < 4; ++c) {
      const __m256i chunk =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qs[c][8 * half]));
      w[c] = _mm256_and_si256(chunk, low_nibbles);
      w[c + 4] = _mm256_and_si256(_mm256_srli_epi16(chunk, 4), low_nibbles);
    }
    const __m256 d_w =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block.d + 8 * half)));
    for (int t = 0; t < T; ++t) {
      const ActivationBlock& xb = x[t * blocks + b];
      __m256i even = _mm256_set1_epi32(x_offsets[t * blocks + b]);
      __m256i odd = _mm256_setzero_si256();
      for (int i = 0; i < 8; i += 2) {
        even = dot_of_four(even, w[i], activations_of_group_avx2(xb, i));
        odd = dot_of_four(odd, w[i + 1], activations_of_group_avx2(xb, i + 1));
      }
      const __m256 dot = _mm256_cvtepi32_ps(_mm256_add_epi32(even, odd));
      acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d_w, _mm256_set1_ps(xb.d)), dot, acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) {
    if (valid >= 8) {
      _mm256_storeu_ps(out + t * out_stride, acc[t]);
    } else {
      float sums[8];
      _mm256_storeu_ps(sums, acc[t]);
      std::copy(sums, sums + valid, out + t * out_stride);
    }
  }
}

// Two tokens at a time: 8 weight registers and 2 sums, with the dots' temporaries, in 16.
constexpr int kAvx2Tokens = 2;

SERVESCOPE_AVX2 void product_avx2(const uint8_t* packed, int64_t cols, int64_t first_row,
                                  int64_t end_row, const ActivationBlock* x,
                                  const int32_t* x_offsets, int64_t tokens, float* out,
                                  int64_t out_stride) {
  const int64_t blocks = cols / kQuantBlock;
  for (int64_t r = first_row; r < end_row; r += kInterleavedRows / 2) {
    const InterleavedQ4Block* group = group_blocks(packed, blocks, r / kInterleavedRows);
    const auto half = static_cast<int>((r % kInterleavedRows) / 8);
    const int64_t valid = std::min<int64_t>(8, end_row - r);
    int64_t t = 0;
    for (; t + kAvx2Tokens <= tokens; t += kAvx2Tokens) {
      half_group_avx2<kAvx2Tokens>(group, blocks, half, x + t * blocks, x_offsets + t * blocks,
                                   out + t * out_stride + r, out_stride, valid);
    }
    if (t < tokens) {
      half_group_avx2<1>(group, blocks, half, x + t * blocks, x_offsets + t * blocks,
                         out + t * out_stride + r, out_stride, valid);
    }
  }
}

bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c");
  return has;
}

bool cpu_has_avx512_vnni() {
  static const bool has =
      cpu_has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni");
  return has;
}

#endif

}  // namespace

std::vector<uint8_t> interleave_q4_0(const uint8_t* data, int64_t rows, int64_t cols) {
  const int64_t blocks = cols / kQuantBlock;
  const int64_t groups = (rows + kInterleavedRows - 1) / kInterleavedRows;
  std::vector<uint8_t> packed(static_cast<size_t>(groups * blocks) * sizeof(InterleavedQ4Block), 0);
  auto* out = reinterpret_cast<InterleavedQ4Block*>(packed.data());
  for (int64_t r = 0; r < rows; ++r) {
    const auto lane = static_cast<size_t>(r % kInterleavedRows);
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* source = data + (r * blocks + b) * kQ4Bytes;
      InterleavedQ4Block& block = out[(r / kInterleavedRows) * blocks + b];
      std::memcpy(&block.d[lane], source, sizeof(uint16_t));
      for (size_t c = 0; c < 4; ++c) std::memcpy(block.qs[c][lane], source + 2 + 4 * c, 4);
    }
  }
  return packed;
}

void interleaved_q4_0_row(const uint8_t* packed, int64_t cols, int64_t row, float* dst) {
  const int64_t blocks = cols / kQuantBlock;
  const InterleavedQ4Block* group = group_blocks(packed, blocks, row / kInterleavedRows);
  const auto lane = static_cast<size_t>(row % kInterleavedRows);
  uint8_t block[kQ4Bytes];
  for (int64_t b = 0; b < blocks; ++b) {
    std::memcpy(block, &group[b].d[lane], sizeof(uint16_t));
    for (size_t c = 0; c < 4; ++c) std::memcpy(block + 2 + 4 * c, group[b].qs[c][lane], 4);
    gguf::dequantize_row(gguf::GgmlType::Q4_0, block, dst + b * kQuantBlock, kQuantBlock);
  }
}

std::vector<InterleavedQ4Kernel> interleaved_q4_0_kernel_variants() {
  std::vector<InterleavedQ4Kernel> variants = {product_portable};
#ifdef SERVESCOPE_X86_SIMD
  if (cpu_has_avx2()) variants.push_back(product_avx2);
  if (cpu_has_avx512_vnni()) variants.push_back(product_avx512);
#endif
  return variants;
}

InterleavedQ4Kernel interleaved_q4_0_kernel() {
  static const InterleavedQ4Kernel kernel = interleaved_q4_0_kernel_variants().back();
  return kernel;
}

}  // namespace servescope::compute
