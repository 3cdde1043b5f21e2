// Q4_1, Q5_0, Q5_1, BF16 and the K-quants Q2_K .. Q6_K against
// tools/golden/make_block_fixtures.py: numpy encoders and decoders written from GGML's format
// description, not from this C++ code.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "engine/gguf/ggml_types.h"

namespace servescope::gguf {
namespace {

const std::string kQuant = std::string(SERVESCOPE_TEST_DATA_DIR) + "/quant/";

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

template <class T>
std::vector<T> read_values(const std::string& path) {
  const std::vector<uint8_t> raw = read_bytes(path);
  std::vector<T> values(raw.size() / sizeof(T));
  std::memcpy(values.data(), raw.data(), values.size() * sizeof(T));
  return values;
}

struct Fixture {
  GgmlType type;
  const char* label;
};

class BlockFixture : public testing::TestWithParam<Fixture> {};

TEST_P(BlockFixture, QuantisesToTheNumpyBytes) {
  const std::vector<float> values = read_values<float>(kQuant + "blocks.f32");
  const std::vector<uint8_t> expected = read_bytes(kQuant + "blocks." + GetParam().label);
  const auto n = static_cast<int64_t>(values.size());
  ASSERT_GT(n, 0);
  std::vector<uint8_t> ours(row_bytes(GetParam().type, n));
  quantize_row(GetParam().type, values.data(), ours.data(), n);
  ASSERT_EQ(ours.size(), expected.size());
  const auto block = static_cast<size_t>(block_bytes(GetParam().type));
  for (size_t b = 0; b < ours.size() / block; ++b) {
    EXPECT_TRUE(std::equal(ours.begin() + static_cast<std::ptrdiff_t>(b * block),
                           ours.begin() + static_cast<std::ptrdiff_t>((b + 1) * block),
                           expected.begin() + static_cast<std::ptrdiff_t>(b * block)))
        << "block " << b;
  }
}

// The numpy file's bytes dequantise to exactly the numpy values.
void expect_bit_exact_dequantisation(const Fixture& fixture) {
  const std::vector<uint8_t> encoded = read_bytes(kQuant + "blocks." + fixture.label);
  const std::vector<double> expected =
      read_values<double>(kQuant + "blocks." + fixture.label + ".f64");
  ASSERT_FALSE(expected.empty());
  const auto n = static_cast<int64_t>(expected.size());
  ASSERT_EQ(encoded.size(), row_bytes(fixture.type, n));
  std::vector<float> ours(expected.size());
  dequantize_row(fixture.type, encoded.data(), ours.data(), n);
  for (size_t i = 0; i < ours.size(); ++i) {
    ASSERT_EQ(static_cast<double>(ours[i]), expected[i]) << "element " << i;
  }
}

TEST_P(BlockFixture, DequantisesBitExactly) { expect_bit_exact_dequantisation(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    Types, BlockFixture,
    testing::Values(Fixture{GgmlType::Q4_1, "q4_1"}, Fixture{GgmlType::Q5_0, "q5_0"},
                    Fixture{GgmlType::Q5_1, "q5_1"}, Fixture{GgmlType::BF16, "bf16"}),
    [](const auto& param_info) { return std::string(param_info.param.label); });

// The K-quants' quantiser is ServeScope's own search (not llama.cpp's bytes), so it is held to
// the error of the numpy reference search on the same input, super-block by super-block.
class KBlockFixture : public testing::TestWithParam<Fixture> {};

TEST_P(KBlockFixture, DequantisesBitExactly) { expect_bit_exact_dequantisation(GetParam()); }

double rms_difference(const float* a, const double* b, int n) {
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(sum / n);
}

TEST_P(KBlockFixture, QuantisesAsCloselyAsTheNumpyReference) {
  const std::vector<float> values = read_values<float>(kQuant + "blocks_k.f32");
  const std::vector<double> numpy =
      read_values<double>(kQuant + "blocks." + std::string(GetParam().label) + ".f64");
  const auto n = static_cast<int64_t>(values.size());
  ASSERT_GT(n, 0);
  ASSERT_EQ(numpy.size(), values.size());
  std::vector<uint8_t> encoded(row_bytes(GetParam().type, n));
  quantize_row(GetParam().type, values.data(), encoded.data(), n);
  std::vector<float> ours(values.size());
  dequantize_row(GetParam().type, encoded.data(), ours.data(), n);
  const std::vector<double> source(values.begin(), values.end());
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const int64_t at = b * kSuperBlock;
    std::vector<float> numpy_f(numpy.begin() + at, numpy.begin() + at + kSuperBlock);
    const double reference = rms_difference(numpy_f.data(), source.data() + at, kSuperBlock);
    const double error = rms_difference(ours.data() + at, source.data() + at, kSuperBlock);
    EXPECT_LE(error, 1.05 * reference + 1e-9) << "super-block " << b;
    // And the error is a quantisation error, not a layout mix-up: far below the signal.
    const std::vector<float> zeros(kSuperBlock, 0.0f);
    const double signal = rms_difference(zeros.data(), source.data() + at, kSuperBlock);
    EXPECT_LT(error, 0.5 * signal) << "super-block " << b;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Types, KBlockFixture,
    testing::Values(Fixture{GgmlType::Q2_K, "q2_k"}, Fixture{GgmlType::Q3_K, "q3_k"},
                    Fixture{GgmlType::Q4_K, "q4_k"}, Fixture{GgmlType::Q5_K, "q5_k"},
                    Fixture{GgmlType::Q6_K, "q6_k"}),
    [](const auto& param_info) { return std::string(param_info.param.label); });

// Hand-worked blocks pin the bit order the fixtures could share with a wrong reading.
TEST(BlockLayout, Q5_0FifthBitOfElementJIsBitJOfQh) {
  BlockQ5_0 block{};
  block.d = fp32_to_fp16(1.0f);
  block.qs[3] = 0x21;                            // element 3: low nibble 1, element 19: 2
  const uint32_t high = (1u << 3) | (1u << 19);  // both get the fifth bit (+16)
  std::memcpy(block.qh, &high, sizeof high);
  float out[kQuantBlock];
  dequantize_row(GgmlType::Q5_0, &block, out, kQuantBlock);
  EXPECT_EQ(out[3], 1.0f);    // (1 + 16) - 16
  EXPECT_EQ(out[19], 2.0f);   // (2 + 16) - 16
  EXPECT_EQ(out[0], -16.0f);  // 0 - 16
}

TEST(BlockLayout, Q4_1AddsTheMinimum) {
  BlockQ4_1 block{};
  block.d = fp32_to_fp16(0.5f);
  block.m = fp32_to_fp16(-2.0f);
  block.qs[0] = 0xF3;  // element 0: 3, element 16: 15
  float out[kQuantBlock];
  dequantize_row(GgmlType::Q4_1, &block, out, kQuantBlock);
  EXPECT_EQ(out[0], -0.5f);
  EXPECT_EQ(out[16], 5.5f);
  EXPECT_EQ(out[1], -2.0f);
}

TEST(BlockLayout, Bf16IsTheTopHalfRoundedToEven) {
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(bf16_to_fp32(0xC040), -3.0f);
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3F808000u)), 0x3F80);  // tie, even stays
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3F818000u)), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x7F800001u)), 0x7FC0);  // NaN stays NaN, quiet
}

// Hand-worked K-quant super-blocks pin the bit positions GGML documents only in code.
TEST(BlockLayout, Q3_KClearHighBitSubtractsFourAndScalesUnpack) {
  BlockQ3_K block{};
  block.d = fp32_to_fp16(1.0f);
  // Scale 9 (sub-block 9, elements 144..159): stored 32 + 5 = 37 = 0b10'0101: low nibble 5 in
  // the high nibble of scales[1], high bits 2 at bits 4..5 of scales[9].
  block.scales[1] = 0x50;
  block.scales[9] = 0x20;
  // Element 150 = 128 + 32 * 0 + 22: low bits at qs[32 + 22] bits 0..1, high bit: bit 4 of
  // hmask[22].
  block.qs[54] = 0x03;
  block.hmask[22] = 0x10;
  float out[kSuperBlock];
  dequantize_row(GgmlType::Q3_K, &block, out, kSuperBlock);
  EXPECT_EQ(out[150], 5.0f * 3.0f);   // (37 - 32) * (3 - 0)
  EXPECT_EQ(out[151], 5.0f * -4.0f);  // (0 - 4): its high bit is clear
  EXPECT_EQ(out[0], 128.0f);          // all bits clear: scale 0 - 32, q 0 - 4
}

TEST(BlockLayout, Q4_KUpperSubBlocksTakeHighBitsFromTheFirstBytes) {
  BlockQ4_K block{};
  block.d = fp32_to_fp16(1.0f);
  block.dmin = fp32_to_fp16(0.5f);
  // Sub-block 5 (elements 160..191): scale 0b11'0010 = 50, min 0b01'0111 = 23.
  block.scales[9] = 0x72;       // low nibbles: scale 2, min 7
  block.scales[1] = 0xC0;       // top 2 bits of scale: 3
  block.scales[5] = 0x40;       // top 2 bits of min: 1
  block.qs[32 * 2 + 0] = 0x90;  // element 160 is the high nibble of qs[64]: 9
  float out[kSuperBlock];
  dequantize_row(GgmlType::Q4_K, &block, out, kSuperBlock);
  EXPECT_EQ(out[160], 50.0f * 9.0f - 0.5f * 23.0f);
  EXPECT_EQ(out[161], -0.5f * 23.0f);
}

TEST(BlockLayout, Q6_KQuartersShareQhBytes) {
  BlockQ6_K block{};
  block.d = fp32_to_fp16(0.25f);
  for (int8_t& scale : block.scales) scale = 1;
  block.scales[14] = -2;         // sub-block 14: elements 224..239
  block.ql[64 + 32 + 5] = 0xA0;  // element 128 + 96 + 5 = 229: high nibble of ql[64 + 37]
  block.qh[32 + 5] = 0xC0;       // its top bits: bits 6..7 of qh[32 + 5] = 3
  float out[kSuperBlock];
  dequantize_row(GgmlType::Q6_K, &block, out, kSuperBlock);
  EXPECT_EQ(out[229], 0.25f * -2.0f * static_cast<float>((0x0A | (3 << 4)) - 32));
  EXPECT_EQ(out[228], 0.25f * -2.0f * -32.0f);
}

}  // namespace
}  // namespace servescope::gguf
