#include "engine/gguf/ggml_types.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/core/error.h"

namespace servescope::gguf {
namespace {

TEST(GgmlTypes, NamesAndSupport) {
  EXPECT_EQ(type_name(GgmlType::F32), "F32");
  EXPECT_EQ(type_name(GgmlType::F16), "F16");
  EXPECT_EQ(type_name(GgmlType::Q4_0), "Q4_0");
  EXPECT_EQ(type_name(GgmlType::Q8_0), "Q8_0");
  EXPECT_EQ(type_name(GgmlType::Q5_K), "Q5_K");
  EXPECT_EQ(type_name(GgmlType::BF16), "BF16");
  EXPECT_EQ(type_name(static_cast<GgmlType>(4)), "unknown");
  EXPECT_EQ(type_name(static_cast<GgmlType>(1000)), "unknown");
  EXPECT_TRUE(is_supported(GgmlType::F32));
  EXPECT_TRUE(is_supported(GgmlType::F16));
  EXPECT_TRUE(is_supported(GgmlType::Q8_0));
  EXPECT_TRUE(is_supported(GgmlType::Q4_0));
  EXPECT_TRUE(is_supported(GgmlType::Q4_1));
  EXPECT_TRUE(is_supported(GgmlType::Q5_0));
  EXPECT_TRUE(is_supported(GgmlType::Q5_1));
  EXPECT_TRUE(is_supported(GgmlType::BF16));
  EXPECT_TRUE(is_supported(GgmlType::Q2_K));
  EXPECT_TRUE(is_supported(GgmlType::Q3_K));
  EXPECT_TRUE(is_supported(GgmlType::Q4_K));
  EXPECT_TRUE(is_supported(GgmlType::Q5_K));
  EXPECT_TRUE(is_supported(GgmlType::Q6_K));
  EXPECT_FALSE(is_supported(GgmlType::Q8_K));
  EXPECT_FALSE(is_supported(GgmlType::IQ4_XS));
  EXPECT_FALSE(is_supported(GgmlType::Q8_1));
}

TEST(GgmlTypes, BlockSizesMatchGgml) {
  EXPECT_EQ(block_elements(GgmlType::F32), 1);
  EXPECT_EQ(block_elements(GgmlType::F16), 1);
  EXPECT_EQ(block_elements(GgmlType::Q8_0), 32);
  EXPECT_EQ(block_elements(GgmlType::Q4_0), 32);
  EXPECT_EQ(block_bytes(GgmlType::F32), 4);
  EXPECT_EQ(block_bytes(GgmlType::F16), 2);
  EXPECT_EQ(block_bytes(GgmlType::Q8_0), 34);
  EXPECT_EQ(block_bytes(GgmlType::Q4_0), 18);
  EXPECT_EQ(row_bytes(GgmlType::F32, 7), 28u);
  EXPECT_EQ(row_bytes(GgmlType::F16, 7), 14u);
  EXPECT_EQ(row_bytes(GgmlType::Q8_0, 4096), 4096u / 32 * 34);
  EXPECT_EQ(row_bytes(GgmlType::Q4_0, 64), 36u);
  EXPECT_EQ(row_bytes(GgmlType::Q4_0, 0), 0u);
  // GGML's type_traits: Q4_1 20, Q5_0 22, Q5_1 24 bytes per 32 elements; BF16 2 per element.
  EXPECT_EQ(row_bytes(GgmlType::Q4_1, 64), 40u);
  EXPECT_EQ(row_bytes(GgmlType::Q5_0, 64), 44u);
  EXPECT_EQ(row_bytes(GgmlType::Q5_1, 64), 48u);
  EXPECT_EQ(row_bytes(GgmlType::BF16, 7), 14u);
  EXPECT_EQ(block_elements(GgmlType::Q5_1), 32);
  EXPECT_THROW(row_bytes(GgmlType::Q5_0, 48), GgufError);
  // GGML's type_traits: 256 elements per super-block, 84 / 110 / 144 / 176 / 210 bytes.
  EXPECT_EQ(block_elements(GgmlType::Q4_K), 256);
  EXPECT_EQ(row_bytes(GgmlType::Q2_K, 512), 168u);
  EXPECT_EQ(row_bytes(GgmlType::Q3_K, 256), 110u);
  EXPECT_EQ(row_bytes(GgmlType::Q4_K, 256), 144u);
  EXPECT_EQ(row_bytes(GgmlType::Q5_K, 256), 176u);
  EXPECT_EQ(row_bytes(GgmlType::Q6_K, 768), 630u);
  EXPECT_THROW(row_bytes(GgmlType::Q4_K, 672), GgufError);  // rows must be whole super-blocks
}

TEST(GgmlTypes, RowBytesRejectsBadCounts) {
  EXPECT_THROW(row_bytes(GgmlType::Q8_0, 33), GgufError);
  EXPECT_THROW(row_bytes(GgmlType::F32, -1), GgufError);
  EXPECT_THROW(row_bytes(GgmlType::F32, std::numeric_limits<int64_t>::max()), GgufError);
  EXPECT_THROW(row_bytes(GgmlType::IQ4_XS, 256), GgufError);
  EXPECT_THROW(block_bytes(GgmlType::Q8_K), GgufError);
}

TEST(Fp16, KnownValuesToFloat) {
  EXPECT_EQ(fp16_to_fp32(0x0000), 0.0f);
  EXPECT_TRUE(std::signbit(fp16_to_fp32(0x8000)));
  EXPECT_EQ(fp16_to_fp32(0x3C00), 1.0f);
  EXPECT_EQ(fp16_to_fp32(0xC000), -2.0f);
  EXPECT_EQ(fp16_to_fp32(0x7BFF), 65504.0f);
  EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_to_fp32(0x03FF), 1023 * std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_to_fp32(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(fp16_to_fp32(0x3555), 0.333251953125f);
  EXPECT_EQ(fp16_to_fp32(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fp16_to_fp32(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7E00)));
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7C01)));
}

TEST(Fp16, KnownValuesFromFloat) {
  EXPECT_EQ(fp32_to_fp16(0.0f), 0x0000);
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_fp16(1.0f), 0x3C00);
  EXPECT_EQ(fp32_to_fp16(-2.0f), 0xC000);
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7BFF);
  EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7BFF);  // below the halfway point 65520
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7C00);  // the tie rounds to even: infinity
  EXPECT_EQ(fp32_to_fp16(1e10f), 0x7C00);
  EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(fp32_to_fp16(-std::numeric_limits<float>::infinity()), 0xFC00);
  const uint16_t nan = fp32_to_fp16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
  // A signalling NaN whose payload sits only in the low bits must stay a NaN.
  EXPECT_NE(fp32_to_fp16(std::bit_cast<float>(0x7F800001u)) & 0x03FF, 0);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // tie: rounds to even 0
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(3.0f, -25)), 0x0002);         // tie 1.5 ulp: rounds to even 2
  EXPECT_EQ(fp32_to_fp16(std::ldexp(5.0f, -25)), 0x0002);         // tie 2.5 ulp: rounds to even 2
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -14)), 0x0400);         // smallest normal
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1023.5f, -24)), 0x0400);      // rounds up into the normals
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie, to even
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie, to even
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  EXPECT_EQ(fp32_to_fp16(1e-10f), 0x0000);
}

TEST(Fp16, EveryHalfSurvivesARoundTrip) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto half = static_cast<uint16_t>(bits);
    const float value = fp16_to_fp32(half);
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(fp16_to_fp32(fp32_to_fp16(value)))) << bits;
    } else {
      EXPECT_EQ(fp32_to_fp16(value), half) << bits;
    }
  }
}

TEST(Fp16, MidpointsBetweenNeighbouringHalvesRoundToEven) {
  // Between every pair of adjacent positive finite halves, the exact midpoint goes to the
  // even one and anything a hair above goes up.
  for (uint16_t half = 0; half < 0x7BFF; ++half) {
    const double low = fp16_to_fp32(half);
    const double high = fp16_to_fp32(static_cast<uint16_t>(half + 1));
    const auto midpoint = static_cast<float>((low + high) / 2);
    const uint16_t even = (half & 1) ? static_cast<uint16_t>(half + 1) : half;
    ASSERT_EQ(fp32_to_fp16(midpoint), even) << half;
    ASSERT_EQ(fp32_to_fp16(std::nextafter(midpoint, 1e9f)), half + 1) << half;
    ASSERT_EQ(fp32_to_fp16(std::nextafter(midpoint, 0.0f)), half) << half;
  }
}

TEST(Quantize, Q8_0HandComputedBlock) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;
  x[1] = 2.5f;   // roundf: half away from zero -> 3
  x[2] = -2.5f;  // -> -3
  x[3] = 0.49f;
  BlockQ8_0 block{};
  quantize_row(GgmlType::Q8_0, x.data(), &block, 32);
  EXPECT_EQ(block.d, fp32_to_fp16(1.0f));
  EXPECT_EQ(block.qs[0], 127);
  EXPECT_EQ(block.qs[1], 3);
  EXPECT_EQ(block.qs[2], -3);
  EXPECT_EQ(block.qs[3], 0);
  std::vector<float> back(32);
  dequantize_row(GgmlType::Q8_0, &block, back.data(), 32);
  EXPECT_EQ(back[0], 127.0f);
  EXPECT_EQ(back[1], 3.0f);
}

TEST(Quantize, Q4_0HandComputedBlockAndNibbleOrder) {
  std::vector<float> x(32, 0.0f);
  x[0] = -8.0f;   // max by magnitude, negative: d = 1
  x[1] = 7.0f;    // 7 + 8.5 = 15.5 -> 15
  x[16] = 3.0f;   // high nibble of byte 0
  x[17] = -0.5f;  // -0.5 + 8.5 = 8 -> 8
  BlockQ4_0 block{};
  quantize_row(GgmlType::Q4_0, x.data(), &block, 32);
  EXPECT_EQ(block.d, fp32_to_fp16(1.0f));
  EXPECT_EQ(block.qs[0], (11 << 4) | 0);
  EXPECT_EQ(block.qs[1], (8 << 4) | 15);
  std::vector<float> back(32);
  dequantize_row(GgmlType::Q4_0, &block, back.data(), 32);
  EXPECT_EQ(back[0], -8.0f);
  EXPECT_EQ(back[1], 7.0f);
  EXPECT_EQ(back[16], 3.0f);
  EXPECT_EQ(back[17], 0.0f);
}

// Worked by hand: the infinity is the largest magnitude, so the scale is infinite and x / d is
// 0 for every finite value (Q8_0 code 0, Q4_0 code 8, its zero point); inf x 0 and NaN are NaN,
// which codes as 0 instead of the undefined float-to-int cast of GGML's reference.
TEST(Quantize, NonFiniteInputsGiveTheHandWorkedBlock) {
  std::vector<float> x(32, 1.0f);
  x[4] = std::numeric_limits<float>::infinity();
  x[5] = std::numeric_limits<float>::quiet_NaN();
  BlockQ8_0 q8{};
  quantize_row(GgmlType::Q8_0, x.data(), &q8, 32);
  EXPECT_EQ(q8.d, 0x7C00);  // +inf: max|x| / 127
  for (int j = 0; j < 32; ++j) EXPECT_EQ(q8.qs[j], 0) << j;

  BlockQ4_0 q4{};
  quantize_row(GgmlType::Q4_0, x.data(), &q4, 32);
  EXPECT_EQ(q4.d, 0xFC00);  // -inf: the largest value, +inf, over -8
  for (int j = 0; j < 16; ++j) {
    // Byte j holds element j (low nibble) and element j + 16 (high nibble).
    const int low = (j == 4 || j == 5) ? 0 : 8;
    EXPECT_EQ(q4.qs[j], (8 << 4) | low) << j;
  }
}

TEST(Quantize, RejectsUnsupportedTypesAndPartialBlocks) {
  std::vector<float> x(64, 0.0f);
  std::vector<uint8_t> out(256);
  EXPECT_THROW(quantize_row(GgmlType::Q5_K, x.data(), out.data(), 64), GgufError);
  EXPECT_THROW(quantize_row(GgmlType::Q8_0, x.data(), out.data(), 31), GgufError);
  EXPECT_THROW(dequantize_row(GgmlType::IQ4_XS, out.data(), x.data(), 256), GgufError);
  EXPECT_THROW(dequantize_row(GgmlType::Q6_K, out.data(), x.data(), 64), GgufError);
}

TEST(Quantize, F16AndF32RowsRoundTrip) {
  const std::vector<float> x = {0.0f, -1.5f, 65504.0f, 1e-7f};
  std::vector<uint8_t> bytes(row_bytes(GgmlType::F16, 4));
  quantize_row(GgmlType::F16, x.data(), bytes.data(), 4);
  std::vector<float> back(4);
  dequantize_row(GgmlType::F16, bytes.data(), back.data(), 4);
  EXPECT_EQ(back[1], -1.5f);
  EXPECT_EQ(back[2], 65504.0f);
  EXPECT_EQ(back[3], fp16_to_fp32(fp32_to_fp16(1e-7f)));
  bytes.resize(row_bytes(GgmlType::F32, 4));
  quantize_row(GgmlType::F32, x.data(), bytes.data(), 4);
  dequantize_row(GgmlType::F32, bytes.data(), back.data(), 4);
  EXPECT_EQ(back, x);
}

}  // namespace
}  // namespace servescope::gguf
