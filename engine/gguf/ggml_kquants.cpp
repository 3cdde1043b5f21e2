#include "engine/gguf/ggml_kquants.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/gguf/block_io.h"
#include "engine/gguf/ggml_types.h"

namespace servescope::gguf::kquants {
namespace {

constexpr int kK = kSuperBlock;

// --- scale packing ---------------------------------------------------------------------------

// Q4_K / Q5_K: the 6-bit scale and min of sub-block j (see kKScaleBytes).
void unpack_scale_min(const uint8_t (&packed)[kKScaleBytes], int j, int& scale, int& min) {
  if (j < 4) {
    scale = packed[j] & 63;
    min = packed[j + 4] & 63;
  } else {
    scale = (packed[j + 4] & 0x0F) | ((packed[j - 4] >> 6) << 4);
    min = (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
  }
}

void pack_scale_min(const std::array<int, 8>& scale, const std::array<int, 8>& min,
                    uint8_t (&packed)[kKScaleBytes]) {
  for (int j = 0; j < 4; ++j) {
    packed[j] = static_cast<uint8_t>(scale[j] | ((scale[j + 4] >> 4) << 6));
    packed[j + 4] = static_cast<uint8_t>(min[j] | ((min[j + 4] >> 4) << 6));
    packed[j + 8] = static_cast<uint8_t>((scale[j + 4] & 0x0F) | ((min[j + 4] & 0x0F) << 4));
  }
}

// Q3_K: the signed 6-bit scale of sub-block i (see BlockQ3_K).
int q3_scale(const uint8_t (&packed)[12], int i) {
  const int low = i < 8 ? packed[i] & 0x0F : packed[i - 8] >> 4;
  const int high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
  return (low | (high << 4)) - 32;
}

void pack_q3_scales(const std::array<int, 16>& scale, uint8_t (&packed)[12]) {
  std::memset(packed, 0, sizeof packed);
  for (int i = 0; i < 16; ++i) {
    const int stored = scale[static_cast<size_t>(i)] + 32;  // 0..63
    packed[i % 8] |= static_cast<uint8_t>((stored & 0x0F) << (i < 8 ? 0 : 4));
    packed[8 + i % 4] |= static_cast<uint8_t>((stored >> 4) << (2 * (i / 4)));
  }
}

}  // namespace

// --- dequantisers ------------------------------------------------------------------------------

// Q2_K / Q3_K walk a super-block as 8 groups of 32 elements (e = 32 g + l, g = 4 h + j) whose
// 2-bit quants share a byte row of qs and a shift, and whose two halves of 16 are sub-blocks
// 2 g and 2 g + 1; loops in this order vectorise.
void dequantize_q2_k(const uint8_t* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b) {
    const auto block = load_block<BlockQ2_K>(src, b);
    const float d = fp16_to_fp32(block.d);
    const float dmin = fp16_to_fp32(block.dmin);
    for (int g = 0; g < 8; ++g) {
      const uint8_t* q = block.qs + 32 * (g / 4);
      const int shift = 2 * (g % 4);
      for (int half = 0; half < 2; ++half) {
        const int packed = block.scales[2 * g + half];
        const float dl = d * static_cast<float>(packed & 0x0F);
        const float ml = dmin * static_cast<float>(packed >> 4);
        float* y = dst + b * kK + 32 * g + 16 * half;
        for (int l = 0; l < 16; ++l) {
          y[l] = dl * static_cast<float>((q[16 * half + l] >> shift) & 3) - ml;
        }
      }
    }
  }
}

void dequantize_q3_k(const uint8_t* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b) {
    const auto block = load_block<BlockQ3_K>(src, b);
    const float d = fp16_to_fp32(block.d);
    for (int g = 0; g < 8; ++g) {
      const uint8_t* q = block.qs + 32 * (g / 4);
      const int shift = 2 * (g % 4);
      for (int half = 0; half < 2; ++half) {
        const float dl = d * static_cast<float>(q3_scale(block.scales, 2 * g + half));
        float* y = dst + b * kK + 32 * g + 16 * half;
        for (int l = 0; l < 16; ++l) {
          const int i = 16 * half + l;
          const int high = (block.hmask[i] >> g) & 1;  // clear: subtract 4
          y[l] = dl * static_cast<float>(((q[i] >> shift) & 3) - 4 * (1 - high));
        }
      }
    }
  }
}

namespace {

// Q4_K and Q5_K share everything but the fifth bit; fifth_bit(block, e) is 0 or 16.
template <class Block, class FifthBit>
void dequantize_k_with_min(const uint8_t* src, float* dst, int64_t blocks, FifthBit fifth_bit) {
  for (int64_t b = 0; b < blocks; ++b) {
    const auto block = load_block<Block>(src, b);
    const float d = fp16_to_fp32(block.d);
    const float dmin = fp16_to_fp32(block.dmin);
    float* y = dst + b * kK;
    for (int c = 0; c < 4; ++c) {  // 64-element chunks: sub-blocks 2 c and 2 c + 1
      int scale = 0;
      int min = 0;
      unpack_scale_min(block.scales, 2 * c, scale, min);
      const float d1 = d * static_cast<float>(scale);
      const float m1 = dmin * static_cast<float>(min);
      unpack_scale_min(block.scales, 2 * c + 1, scale, min);
      const float d2 = d * static_cast<float>(scale);
      const float m2 = dmin * static_cast<float>(min);
      for (int l = 0; l < 32; ++l) {
        const uint8_t byte = block.qs[32 * c + l];
        const int q1 = (byte & 0x0F) + fifth_bit(block, l, 2 * c);
        const int q2 = (byte >> 4) + fifth_bit(block, l, 2 * c + 1);
        y[64 * c + l] = d1 * static_cast<float>(q1) - m1;
        y[64 * c + 32 + l] = d2 * static_cast<float>(q2) - m2;
      }
    }
  }
}

}  // namespace

void dequantize_q4_k(const uint8_t* src, float* dst, int64_t blocks) {
  dequantize_k_with_min<BlockQ4_K>(src, dst, blocks, [](const BlockQ4_K&, int, int) { return 0; });
}

void dequantize_q5_k(const uint8_t* src, float* dst, int64_t blocks) {
  dequantize_k_with_min<BlockQ5_K>(src, dst, blocks, [](const BlockQ5_K& block, int l, int bit) {
    return ((block.qh[l] >> bit) & 1) << 4;
  });
}

void dequantize_q6_k(const uint8_t* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b) {
    const auto block = load_block<BlockQ6_K>(src, b);
    const float d = fp16_to_fp32(block.d);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = block.ql + 64 * h;
      const uint8_t* qh = block.qh + 32 * h;
      const int8_t* sc = block.scales + 8 * h;
      float* y = dst + b * kK + 128 * h;
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

// --- quantisers --------------------------------------------------------------------------------

namespace {

// round(v) clamped to [lo, hi]; NaN gives lo. Rounds half to even, as numpy's rint does:
// adding and subtracting 1.5 * 2^52 leaves the nearest integer of a small double (the
// default rounding mode), without the library call nearbyint is on baseline x86-64.
// Branch-free, so that the search loops vectorise.
double nearest_in(double v, double lo, double hi) {
  const double clamped = std::min(hi, std::max(lo, v));  // max(lo, NaN) is lo
  constexpr double kRound = 0x1.8p52;
  return (clamped + kRound) - kRound;
}

int round_clamped(double v, int lo, int hi) { return static_cast<int>(nearest_in(v, lo, hi)); }

// x ~ scale * q + offset with integer q in [qmin, qmax].
struct Fit {
  double scale = 0.0;
  double offset = 0.0;
};

// The quant nearest to x under `fit` (`inverse` = 1 / fit.scale, or 0 for a zero scale).
int quant_for(double x, const Fit& fit, double inverse, int qmin, int qmax) {
  if (fit.scale == 0.0) return std::clamp(0, qmin, qmax);
  return round_clamped((x - fit.offset) * inverse, qmin, qmax);
}

double inverse_of(double scale) { return scale != 0.0 ? 1.0 / scale : 0.0; }

double squared_error(const float* x, int n, const Fit& fit, int qmin, int qmax) {
  const double inverse = inverse_of(fit.scale);
  double error = 0.0;
  for (int i = 0; i < n; ++i) {
    const double q = quant_for(x[i], fit, inverse, qmin, qmax);
    const double diff = fit.scale * q + fit.offset - x[i];
    error += diff * diff;
  }
  return error;
}

// Candidate inverse scales: the one that maps `span` onto `levels` quant steps, and 20 more
// from levels - 1 to levels + 1 steps (finer steps trade clipping for resolution).
constexpr int kGridSteps = 10;
double grid_levels(int levels, int k) { return levels + 0.1 * k; }

// Asymmetric sub-block (Q2_K, Q4_K, Q5_K): q in [0, qmax], offset <= 0 (GGML stores -offset
// as an unsigned min).
Fit fit_with_offset(const float* x, int n, int qmax) {
  double lo = 0.0;
  double hi = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, static_cast<double>(x[i]));
    hi = std::max(hi, static_cast<double>(x[i]));
  }
  if (!(hi > lo)) return {0.0, lo};  // constant sub-block (or NaNs)
  Fit best{(hi - lo) / qmax, lo};
  double best_error = squared_error(x, n, best, 0, qmax);
  double sx = 0, sxx = 0;
  for (int i = 0; i < n; ++i) {
    sx += x[i];
    sxx += static_cast<double>(x[i]) * x[i];
  }
  for (int k = -kGridSteps; k <= kGridSteps; ++k) {
    const double inverse = grid_levels(qmax, k) / (hi - lo);
    double sq = 0, sqq = 0, sqx = 0;
    for (int i = 0; i < n; ++i) {
      const double q = nearest_in((x[i] - lo) * inverse, 0, qmax);
      sq += q;
      sqq += q * q;
      sqx += q * x[i];
    }
    const double det = n * sqq - sq * sq;
    if (!(det > 0.0)) continue;  // all quants equal: no slope to fit
    Fit fit{(n * sqx - sq * sx) / det, 0.0};
    fit.offset = (sx - fit.scale * sq) / n;
    if (fit.offset > 0.0) fit = {sqx / sqq, 0.0};  // the offset must stay <= 0
    if (!(fit.scale > 0.0)) continue;
    // sum (scale q + offset - x)^2 over these quants, from the sums (no second pass).
    const double s = fit.scale;
    const double o = fit.offset;
    const double error = s * s * sqq + 2 * s * o * sq - 2 * s * sqx + n * o * o - 2 * o * sx + sxx;
    if (error < best_error) {
      best_error = error;
      best = fit;
    }
  }
  return best;
}

// The value of largest magnitude (the first one on ties).
template <class T>
T signed_absmax(const T* x, int n) {
  T max = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > std::fabs(max)) max = x[i];
  }
  return max;
}

// Symmetric sub-block (Q3_K, Q6_K): q in [-qneg, qneg - 1], no offset; the candidates map the
// value of largest magnitude to about -qneg, where the range has its extra level.
Fit fit_symmetric(const float* x, int n, int qneg) {
  const double max = signed_absmax(x, n);
  if (max == 0.0) return {};
  Fit best{max / -qneg, 0.0};
  double best_error = squared_error(x, n, best, -qneg, qneg - 1);
  double sxx = 0;
  for (int i = 0; i < n; ++i) sxx += static_cast<double>(x[i]) * x[i];
  for (int k = -kGridSteps; k <= kGridSteps; ++k) {
    const double inverse = -grid_levels(qneg, k) / max;
    double sqq = 0, sqx = 0;
    for (int i = 0; i < n; ++i) {
      const double q = nearest_in(x[i] * inverse, -qneg, qneg - 1);
      sqq += q * q;
      sqx += q * x[i];
    }
    if (!(sqq > 0.0)) continue;
    const Fit fit{sqx / sqq, 0.0};
    const double error = sxx - sqx * sqx / sqq;  // sum (scale q - x)^2 over these quants
    if (error < best_error) {
      best_error = error;
      best = fit;
    }
  }
  return best;
}

// A super-block with unsigned sub-block scales and mins (Q2_K, Q4_K, Q5_K), before packing.
template <int SubBlocks>
struct WithMin {
  uint16_t d = 0;
  uint16_t dmin = 0;
  std::array<int, SubBlocks> scale{};
  std::array<int, SubBlocks> min{};
  std::array<int, kK> q{};  // 0..qmax
};

template <int SubBlocks>
WithMin<SubBlocks> quantize_with_min(const float* x, int qmax, int scale_max) {
  constexpr int kLen = kK / SubBlocks;
  std::array<Fit, SubBlocks> fits;
  double max_scale = 0.0;
  double max_min = 0.0;
  for (int s = 0; s < SubBlocks; ++s) {
    fits[static_cast<size_t>(s)] = fit_with_offset(x + s * kLen, kLen, qmax);
    max_scale = std::max(max_scale, fits[static_cast<size_t>(s)].scale);
    max_min = std::max(max_min, -fits[static_cast<size_t>(s)].offset);
  }
  WithMin<SubBlocks> out;
  out.d = fp32_to_fp16(static_cast<float>(max_scale / scale_max));
  out.dmin = fp32_to_fp16(static_cast<float>(max_min / scale_max));
  const double d = fp16_to_fp32(out.d);  // round against the scales as stored
  const double dmin = fp16_to_fp32(out.dmin);
  for (int s = 0; s < SubBlocks; ++s) {
    const auto i = static_cast<size_t>(s);
    out.scale[i] = d > 0.0 ? round_clamped(fits[i].scale / d, 0, scale_max) : 0;
    out.min[i] = dmin > 0.0 ? round_clamped(-fits[i].offset / dmin, 0, scale_max) : 0;
    // The quants against the stored scale, in float as the dequantiser computes it.
    const Fit stored{static_cast<float>(d) * static_cast<float>(out.scale[i]),
                     -(static_cast<float>(dmin) * static_cast<float>(out.min[i]))};
    const double inverse = inverse_of(stored.scale);
    for (int l = 0; l < kLen; ++l) {
      out.q[static_cast<size_t>(s * kLen + l)] =
          quant_for(x[s * kLen + l], stored, inverse, 0, qmax);
    }
  }
  return out;
}

// A super-block of 16 symmetric sub-blocks with signed scales (Q3_K, Q6_K), before packing.
struct Symmetric {
  uint16_t d = 0;
  std::array<int, 16> scale{};
  std::array<int, kK> q{};  // -qneg .. qneg - 1
};

Symmetric quantize_symmetric(const float* x, int qneg, int scale_neg) {
  constexpr int kLen = 16;
  std::array<double, 16> scales{};
  for (int s = 0; s < 16; ++s) {
    scales[static_cast<size_t>(s)] = fit_symmetric(x + s * kLen, kLen, qneg).scale;
  }
  Symmetric out;
  out.d = fp32_to_fp16(static_cast<float>(signed_absmax(scales.data(), 16) / -scale_neg));
  const double d = fp16_to_fp32(out.d);
  for (int s = 0; s < 16; ++s) {
    const auto i = static_cast<size_t>(s);
    out.scale[i] = d != 0.0 ? round_clamped(scales[i] / d, -scale_neg, scale_neg - 1) : 0;
    const Fit stored{static_cast<float>(d) * static_cast<float>(out.scale[i]), 0.0};
    const double inverse = inverse_of(stored.scale);
    for (int l = 0; l < kLen; ++l) {
      out.q[static_cast<size_t>(s * kLen + l)] =
          quant_for(x[s * kLen + l], stored, inverse, -qneg, qneg - 1);
    }
  }
  return out;
}

// Stores 2-bit values as Q2_K / Q3_K's qs: bits 2 j of qs[32 h + l] for e = 128 h + 32 j + l.
void pack_two_bits(const std::array<int, kK>& values, uint8_t (&qs)[kK / 4]) {
  std::memset(qs, 0, sizeof qs);
  for (int e = 0; e < kK; ++e) {
    qs[32 * (e / 128) + e % 32] |=
        static_cast<uint8_t>((values[static_cast<size_t>(e)] & 3) << (2 * ((e % 128) / 32)));
  }
}

}  // namespace

void quantize_q2_k(const float* src, uint8_t* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b) {
    const auto quantised = quantize_with_min<16>(src + b * kK, 3, 15);
    BlockQ2_K block{};
    block.d = quantised.d;
    block.dmin = quantised.dmin;
    for (size_t s = 0; s < 16; ++s) {
      block.scales[s] = static_cast<uint8_t>(quantised.scale[s] | (quantised.min[s] << 4));
    }
    pack_two_bits(quantised.q, block.qs);
    store_block(block, dst, b);
  }
}

void quantize_q3_k(const float* src, uint8_t* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b) {
    const Symmetric quantised = quantize_symmetric(src + b * kK, 4, 32);
    BlockQ3_K block{};
    block.d = quantised.d;
    pack_q3_scales(quantised.scale, block.scales);
    std::array<int, kK> stored{};
    for (int e = 0; e < kK; ++e) {
      stored[static_cast<size_t>(e)] = quantised.q[static_cast<size_t>(e)] + 4;  // 0..7
      if (stored[static_cast<size_t>(e)] >= 4) {
        block.hmask[e % 32] |= static_cast<uint8_t>(1u << (e / 32));  // set: no -4
      }
    }
    pack_two_bits(stored, block.qs);
    store_block(block, dst, b);
  }
}

namespace {

// Q4_K / Q5_K: scales and the low nibbles (element 64 c + l low, 64 c + 32 + l high).
template <class Block>
Block pack_k_with_min(const WithMin<8>& quantised) {
  Block block{};
  block.d = quantised.d;
  block.dmin = quantised.dmin;
  pack_scale_min(quantised.scale, quantised.min, block.scales);
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      const int low = quantised.q[static_cast<size_t>(64 * c + l)] & 0x0F;
      const int high = quantised.q[static_cast<size_t>(64 * c + 32 + l)] & 0x0F;
      block.qs[32 * c + l] = static_cast<uint8_t>(low | (high << 4));
    }
  }
  return block;
}

}  // namespace

void quantize_q4_k(const float* src, uint8_t* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b) {
    store_block(pack_k_with_min<BlockQ4_K>(quantize_with_min<8>(src + b * kK, 15, 63)), dst, b);
  }
}

void quantize_q5_k(const float* src, uint8_t* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b) {
    const auto quantised = quantize_with_min<8>(src + b * kK, 31, 63);
    auto block = pack_k_with_min<BlockQ5_K>(quantised);
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int first = quantised.q[static_cast<size_t>(64 * c + l)] >> 4;
        const int second = quantised.q[static_cast<size_t>(64 * c + 32 + l)] >> 4;
        block.qh[l] |= static_cast<uint8_t>((first << (2 * c)) | (second << (2 * c + 1)));
      }
    }
    store_block(block, dst, b);
  }
}

void quantize_q6_k(const float* src, uint8_t* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b) {
    const Symmetric quantised = quantize_symmetric(src + b * kK, 32, 128);
    BlockQ6_K block{};
    block.d = quantised.d;
    for (size_t s = 0; s < 16; ++s) block.scales[s] = static_cast<int8_t>(quantised.scale[s]);
    for (int h = 0; h < 2; ++h) {
      auto u = [&](int offset) {  // stored quant (0..63) of element 128 h + offset
        return quantised.q[static_cast<size_t>(128 * h + offset)] + 32;
      };
      for (int l = 0; l < 32; ++l) {
        block.ql[64 * h + l] = static_cast<uint8_t>((u(l) & 0x0F) | ((u(l + 64) & 0x0F) << 4));
        block.ql[64 * h + l + 32] =
            static_cast<uint8_t>((u(l + 32) & 0x0F) | ((u(l + 96) & 0x0F) << 4));
        block.qh[32 * h + l] =
            static_cast<uint8_t>((u(l) >> 4) | ((u(l + 32) >> 4) << 2) | ((u(l + 64) >> 4) << 4) |
                                 ((u(l + 96) >> 4) << 6));
      }
    }
    store_block(block, dst, b);
  }
}

}  // namespace servescope::gguf::kquants
