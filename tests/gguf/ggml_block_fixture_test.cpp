// Q4_1, Q5_0, Q5_1 and BF16 against tools/golden/make_block_fixtures.py: numpy encoders and
// decoders written from GGML's format description, not from this C++ code.
#include <gtest/gtest.h>

#include <bit>
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

TEST_P(BlockFixture, DequantisesBitExactly) {
  const std::vector<uint8_t> encoded = read_bytes(kQuant + "blocks." + GetParam().label);
  const std::vector<double> expected =
      read_values<double>(kQuant + "blocks." + GetParam().label + ".f64");
  ASSERT_FALSE(expected.empty());
  const auto n = static_cast<int64_t>(expected.size());
  ASSERT_EQ(encoded.size(), row_bytes(GetParam().type, n));
  std::vector<float> ours(expected.size());
  dequantize_row(GetParam().type, encoded.data(), ours.data(), n);
  for (size_t i = 0; i < ours.size(); ++i) {
    ASSERT_EQ(static_cast<double>(ours[i]), expected[i]) << "element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Types, BlockFixture,
    testing::Values(Fixture{GgmlType::Q4_1, "q4_1"}, Fixture{GgmlType::Q5_0, "q5_0"},
                    Fixture{GgmlType::Q5_1, "q5_1"}, Fixture{GgmlType::BF16, "bf16"}),
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

}  // namespace
}  // namespace servescope::gguf
