// Reads the file written by the independent Python writer (tools/golden/make_gguf_fixture.py)
// and checks values, dequantisation and quantisation against what numpy computed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"

namespace servescope::gguf {
namespace {

const std::string kFixtureDir = std::string(SERVESCOPE_TEST_DATA_DIR) + "/gguf/";

std::vector<float> read_f32_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  const std::vector<char> raw((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
  std::vector<float> values(raw.size() / sizeof(float));
  std::memcpy(values.data(), raw.data(), values.size() * sizeof(float));
  return values;
}

class PythonFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    file_ = new GgufFile(GgufFile::open(kFixtureDir + "python_fixture.gguf"));
  }
  static void TearDownTestSuite() {
    delete file_;
    file_ = nullptr;
  }

  static const TensorInfo& tensor(const std::string& name) {
    const TensorInfo* info = file_->find_tensor(name);
    if (info == nullptr) throw std::runtime_error("fixture lacks tensor " + name);
    return *info;
  }

  static std::vector<float> quant_input() {
    const TensorInfo& input = tensor("quant_input");
    std::vector<float> values(static_cast<size_t>(input.n_elements()));
    std::memcpy(values.data(), input.data, input.n_bytes);
    return values;
  }

  static GgufFile* file_;
};

GgufFile* PythonFixture::file_ = nullptr;

TEST_F(PythonFixture, HeaderAndMetadata) {
  EXPECT_EQ(file_->version(), 3u);
  EXPECT_EQ(file_->alignment(), 64u);
  EXPECT_EQ(file_->metadata()[0].first, "general.alignment");
  EXPECT_EQ(file_->find("general.architecture")->as_string(), "llama");
  EXPECT_EQ(file_->find("general.name")->as_string(), "python fixture \xC3\xA9\xC3\xA8");
  EXPECT_EQ(std::get<uint8_t>(file_->find("test.uint8")->data), 200);
  EXPECT_EQ(std::get<int8_t>(file_->find("test.int8")->data), -100);
  EXPECT_EQ(std::get<uint16_t>(file_->find("test.uint16")->data), 60000);
  EXPECT_EQ(std::get<int16_t>(file_->find("test.int16")->data), -30000);
  EXPECT_EQ(std::get<uint32_t>(file_->find("test.uint32")->data), 4000000000u);
  EXPECT_EQ(std::get<int32_t>(file_->find("test.int32")->data), -2000000000);
  EXPECT_EQ(std::get<float>(file_->find("test.float32")->data), 0.1f);
  EXPECT_TRUE(file_->find("test.bool")->as_bool());
  EXPECT_EQ(std::get<uint64_t>(file_->find("test.uint64")->data), (uint64_t{1} << 63) + 5);
  EXPECT_EQ(file_->find("test.int64")->as_int(), -(int64_t{1} << 62));
  EXPECT_EQ(std::get<double>(file_->find("test.float64")->data), 0.1);
  const Array& strings = file_->find("test.strings")->as_array();
  ASSERT_EQ(strings.items.size(), 3u);
  EXPECT_EQ(strings.items[1].as_string(), "");
  EXPECT_EQ(strings.items[2].as_string(), "\xE2\x96\x81hello");
  const Array& ints = file_->find("test.int32s")->as_array();
  ASSERT_EQ(ints.items.size(), 3u);
  EXPECT_EQ(ints.items[1].as_int(), -2);
  EXPECT_EQ(file_->find("test.empty")->as_array().element_type, ValueType::kFloat32);
  EXPECT_TRUE(file_->find("test.empty")->as_array().items.empty());
}

TEST_F(PythonFixture, TensorShapesAreReversedPyTorchShapes) {
  ASSERT_EQ(file_->tensors().size(), 5u);
  const TensorInfo& small = tensor("small.f32");  // numpy shape (2, 3)
  EXPECT_EQ(small.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(small.rows(), 2);
  float last = 0;
  std::memcpy(&last, small.data + 5 * sizeof(float), sizeof last);
  EXPECT_EQ(last, 5.0f);
  for (const TensorInfo& info : file_->tensors()) {
    EXPECT_EQ(info.offset % 64, 0u) << info.name;
    EXPECT_EQ(info.n_bytes,
              row_bytes(info.type, info.shape[0]) * static_cast<uint64_t>(info.rows()));
  }
  EXPECT_EQ(tensor("quant.q8_0").type, GgmlType::Q8_0);
  EXPECT_EQ(tensor("quant.q4_0").type, GgmlType::Q4_0);
  EXPECT_EQ(tensor("quant.f16").type, GgmlType::F16);
  EXPECT_EQ(tensor("quant.q8_0").shape, (std::vector<int64_t>{64, 8}));
}

// Dequantising numpy's bytes gives numpy's floats, bit for bit.
TEST_F(PythonFixture, DequantiseMatchesNumpy) {
  for (const std::string name : {"quant.q8_0", "quant.q4_0", "quant.f16"}) {
    const TensorInfo& info = tensor(name);
    const std::vector<float> expected =
        read_f32_file(kFixtureDir + "python_fixture." + name + ".f32");
    ASSERT_EQ(expected.size(), static_cast<size_t>(info.n_elements())) << name;
    std::vector<float> actual(expected.size());
    dequantize_row(info.type, info.data, actual.data(), info.n_elements());
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(std::memcmp(&actual[i], &expected[i], sizeof(float)), 0)
          << name << " element " << i << ": " << actual[i] << " vs numpy " << expected[i];
    }
  }
}

// quantize_row on the same inputs reproduces numpy's bytes: all-zero block, one huge value,
// negative maximum, ties at .5, equal magnitudes of opposite sign, fp16 edge values.
TEST_F(PythonFixture, QuantiseIsBitExactWithNumpy) {
  const std::vector<float> input = quant_input();
  for (const std::string name : {"quant.q8_0", "quant.q4_0", "quant.f16"}) {
    const TensorInfo& info = tensor(name);
    std::vector<uint8_t> ours(info.n_bytes);
    quantize_row(info.type, input.data(), ours.data(), static_cast<int64_t>(input.size()));
    const int64_t per_block = block_bytes(info.type);
    for (size_t byte = 0; byte < ours.size(); ++byte) {
      ASSERT_EQ(ours[byte], info.data[byte]) << name << " differs at byte " << byte << " (block "
                                             << static_cast<int64_t>(byte) / per_block << ")";
    }
  }
}

}  // namespace
}  // namespace servescope::gguf
