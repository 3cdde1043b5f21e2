// Writer -> reader round trips: every value type, nested arrays, every supported tensor type,
// GGUF v2 and v3, several alignments, in memory and through a memory-mapped file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <vector>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "tests/gguf/gguf_test_util.h"

namespace servescope::gguf {
namespace {

using testing::expect_gguf_error;

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(n);
  for (float& v : values) v = normal(rng);
  return values;
}

Value nested_array() {
  return Value::array(
      ValueType::kArray,
      {Value::array(ValueType::kString, {Value::str("a"), Value::str("bc")}),
       Value::array(ValueType::kArray, {Value::array(ValueType::kFloat64, {Value::f64(2.5)})}),
       Value::array(ValueType::kUint8, {})});
}

GgufWriter writer_with_every_value_type(uint32_t version) {
  GgufWriter writer(version);
  writer.set("u8", Value::u8(255));
  writer.set("i8", Value::i8(-128));
  writer.set("u16", Value::u16(65535));
  writer.set("i16", Value::i16(-32768));
  writer.set("u32", Value::u32(4294967295u));
  writer.set("i32", Value::i32(-2147483647 - 1));
  writer.set("f32", Value::f32(-1.25f));
  writer.set("bool.true", Value::boolean(true));
  writer.set("bool.false", Value::boolean(false));
  writer.set("string", Value::str(std::string("with\0nul and \xC3\xA9", 15)));
  writer.set("empty.string", Value::str(""));
  writer.set("u64", Value::u64(18446744073709551615u));
  writer.set("i64", Value::i64(-9223372036854775807 - 1));
  writer.set("f64", Value::f64(1e300));
  writer.set("array.i32", Value::array(ValueType::kInt32, {Value::i32(1), Value::i32(-2)}));
  writer.set("array.bool",
             Value::array(ValueType::kBool, {Value::boolean(true), Value::boolean(false)}));
  writer.set("array.nested", nested_array());
  return writer;
}

class RoundTrip : public ::testing::TestWithParam<uint32_t> {};

TEST_P(RoundTrip, EveryValueType) {
  const uint32_t version = GetParam();
  const GgufFile file =
      GgufFile::from_bytes(writer_with_every_value_type(version).to_bytes(), "rt.gguf");
  EXPECT_EQ(file.version(), version);
  EXPECT_EQ(file.alignment(), 32u);
  EXPECT_EQ(file.name(), "rt.gguf");
  ASSERT_EQ(file.metadata().size(), 17u);
  EXPECT_EQ(file.metadata()[0].first, "u8");  // file order
  EXPECT_EQ(file.metadata()[16].first, "array.nested");

  EXPECT_EQ(std::get<uint8_t>(file.find("u8")->data), 255);
  EXPECT_EQ(std::get<int8_t>(file.find("i8")->data), -128);
  EXPECT_EQ(std::get<uint16_t>(file.find("u16")->data), 65535);
  EXPECT_EQ(std::get<int16_t>(file.find("i16")->data), -32768);
  EXPECT_EQ(std::get<uint32_t>(file.find("u32")->data), 4294967295u);
  EXPECT_EQ(std::get<int32_t>(file.find("i32")->data), -2147483647 - 1);
  EXPECT_EQ(std::get<float>(file.find("f32")->data), -1.25f);
  EXPECT_TRUE(file.find("bool.true")->as_bool());
  EXPECT_FALSE(file.find("bool.false")->as_bool());
  EXPECT_EQ(file.find("string")->as_string(), std::string("with\0nul and \xC3\xA9", 15));
  EXPECT_EQ(file.find("empty.string")->as_string(), "");
  EXPECT_EQ(std::get<uint64_t>(file.find("u64")->data), 18446744073709551615u);
  EXPECT_EQ(std::get<int64_t>(file.find("i64")->data), -9223372036854775807 - 1);
  EXPECT_EQ(std::get<double>(file.find("f64")->data), 1e300);

  const Array& ints = file.find("array.i32")->as_array();
  EXPECT_EQ(ints.element_type, ValueType::kInt32);
  ASSERT_EQ(ints.items.size(), 2u);
  EXPECT_EQ(ints.items[1].as_int(), -2);
  EXPECT_FALSE(file.find("array.bool")->as_array().items[1].as_bool());

  const Array& nested = file.find("array.nested")->as_array();
  EXPECT_EQ(nested.element_type, ValueType::kArray);
  ASSERT_EQ(nested.items.size(), 3u);
  EXPECT_EQ(nested.items[0].as_array().element_type, ValueType::kString);
  EXPECT_EQ(nested.items[0].as_array().items[1].as_string(), "bc");
  EXPECT_EQ(nested.items[1].as_array().items[0].as_array().items[0].as_float(), 2.5);
  EXPECT_EQ(nested.items[2].as_array().element_type, ValueType::kUint8);
  EXPECT_TRUE(nested.items[2].as_array().items.empty());

  EXPECT_EQ(file.find("absent"), nullptr);
  EXPECT_TRUE(file.tensors().empty());
}

TEST_P(RoundTrip, EverySupportedTensorType) {
  GgufWriter writer(GetParam());
  const std::vector<float> values = random_values(64 * 3, 42);
  const std::vector<GgmlType> types = {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0,
                                       GgmlType::Q4_0};
  for (GgmlType type : types) {
    writer.add_tensor_f32("t." + std::string(type_name(type)), type, {64, 3}, values);
  }
  writer.add_tensor_f32("vector", GgmlType::F32, {5}, std::vector<float>{1, 2, 3, 4, 5});
  writer.add_tensor_f32("4d", GgmlType::F16, {2, 3, 4, 5}, random_values(120, 1));
  const GgufFile file = GgufFile::from_bytes(writer.to_bytes(), "tensors.gguf");
  ASSERT_EQ(file.tensors().size(), 6u);

  for (GgmlType type : types) {
    const TensorInfo* tensor = file.find_tensor("t." + std::string(type_name(type)));
    ASSERT_NE(tensor, nullptr);
    EXPECT_EQ(tensor->type, type);
    EXPECT_EQ(tensor->shape, (std::vector<int64_t>{64, 3}));
    EXPECT_EQ(tensor->n_elements(), 192);
    EXPECT_EQ(tensor->rows(), 3);
    EXPECT_EQ(tensor->n_bytes, row_bytes(type, 64) * 3);
    EXPECT_EQ(tensor->offset % file.alignment(), 0u);
    // The bytes read back are exactly what the quantiser produces for these values.
    std::vector<uint8_t> expected(tensor->n_bytes);
    quantize_row(type, values.data(), expected.data(), 192);
    EXPECT_EQ(std::vector<uint8_t>(tensor->data, tensor->data + tensor->n_bytes), expected);
    // And dequantise to within the type's precision.
    std::vector<float> back(192);
    dequantize_row(type, tensor->data, back.data(), 192);
    const float tolerance = type == GgmlType::F32    ? 0.0f
                            : type == GgmlType::F16  ? 2e-3f
                            : type == GgmlType::Q8_0 ? 0.03f
                                                     : 0.5f;
    for (size_t i = 0; i < back.size(); ++i) EXPECT_NEAR(back[i], values[i], tolerance) << i;
  }
  const TensorInfo* vector = file.find_tensor("vector");
  ASSERT_NE(vector, nullptr);
  EXPECT_EQ(vector->rows(), 1);
  float fifth = 0;
  std::memcpy(&fifth, vector->data + 16, 4);
  EXPECT_EQ(fifth, 5.0f);
  EXPECT_EQ(file.find_tensor("4d")->rows(), 60);
  EXPECT_EQ(file.find_tensor("missing"), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Versions, RoundTrip, ::testing::Values(2u, 3u));

class Alignments : public ::testing::TestWithParam<uint32_t> {};

TEST_P(Alignments, TensorsLandOnTheAlignment) {
  GgufWriter writer;
  writer.set("general.alignment", Value::u32(GetParam()));
  writer.set("general.name", Value::str("x"));
  writer.add_tensor_f32("a", GgmlType::F16, {3}, std::vector<float>{1, 2, 3});
  writer.add_tensor_f32("b", GgmlType::Q4_0, {32}, random_values(32, 3));
  const std::vector<uint8_t> bytes = writer.to_bytes();
  const GgufFile file = GgufFile::from_bytes(bytes, "aligned.gguf");
  EXPECT_EQ(file.alignment(), GetParam());
  for (const TensorInfo& tensor : file.tensors()) {
    EXPECT_EQ(tensor.offset % GetParam(), 0u);
    EXPECT_EQ(static_cast<size_t>(tensor.data - file.tensors()[0].data) % GetParam(), 0u);
  }
  EXPECT_EQ(file.file_size(), bytes.size());
}

INSTANTIATE_TEST_SUITE_P(Powers, Alignments, ::testing::Values(1u, 2u, 8u, 32u, 64u, 4096u));

TEST(Writer, SetReplacesAnExistingKeyInPlace) {
  GgufWriter writer;
  writer.set("a", Value::u32(1));
  writer.set("b", Value::u32(2));
  writer.set("a", Value::str("again"));
  const GgufFile file = GgufFile::from_bytes(writer.to_bytes(), "w.gguf");
  ASSERT_EQ(file.metadata().size(), 2u);
  EXPECT_EQ(file.metadata()[0].first, "a");
  EXPECT_EQ(file.find("a")->as_string(), "again");
}

TEST(Writer, RejectsInvalidInput) {
  GgufWriter writer;
  expect_gguf_error(GgufError::Kind::kUnsupportedVersion, [] { GgufWriter bad(1); });
  expect_gguf_error(GgufError::Kind::kMalformed,
                    [&] { writer.set("general.alignment", Value::u32(48)); });
  expect_gguf_error(GgufError::Kind::kMalformed,
                    [&] { writer.set("general.alignment", Value::u64(64)); });
  expect_gguf_error(GgufError::Kind::kMalformed, [&] {
    writer.set("mixed", Value::array(ValueType::kInt32, {Value::i32(1), Value::u8(2)}));
  });
  const std::string size_message = expect_gguf_error(GgufError::Kind::kMalformed, [&] {
    writer.add_tensor("w", GgmlType::Q8_0, {32, 2}, std::vector<uint8_t>(67));
  });
  EXPECT_NE(size_message.find("expected 68"), std::string::npos) << size_message;
  expect_gguf_error(GgufError::Kind::kMalformed, [&] {
    writer.add_tensor("w", GgmlType::Q8_0, {33}, std::vector<uint8_t>(34));
  });
  expect_gguf_error(GgufError::Kind::kMalformed,
                    [&] { writer.add_tensor("w", GgmlType::F32, {}, {}); });
  expect_gguf_error(GgufError::Kind::kMalformed, [&] {
    writer.add_tensor("w", GgmlType::F32, {1, 1, 1, 1, 1}, {0, 0, 0, 0});
  });
  expect_gguf_error(GgufError::Kind::kUnsupportedTensorType, [&] {
    writer.add_tensor("w", GgmlType::IQ4_XS, {256}, std::vector<uint8_t>(136));
  });
  expect_gguf_error(GgufError::Kind::kMalformed, [&] {
    writer.add_tensor_f32("w", GgmlType::F32, {4}, std::vector<float>{1, 2, 3});
  });
  writer.add_tensor_f32("w", GgmlType::F32, {1}, std::vector<float>{1});
  expect_gguf_error(GgufError::Kind::kMalformed,
                    [&] { writer.add_tensor_f32("w", GgmlType::F32, {1}, std::vector<float>{1}); });
}

// A scratch directory removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    path_ =
        std::filesystem::path(::testing::TempDir()) /
        ("servescope_gguf_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

TEST(MappedFile, WriteThenOpenMapsTheSameContent) {
  const TempDir dir;
  const auto path = dir.path() / "model.gguf";
  GgufWriter writer = writer_with_every_value_type(3);
  const std::vector<float> values = random_values(64, 9);
  writer.add_tensor_f32("w", GgmlType::Q8_0, {64}, values);
  writer.write(path);
  GgufFile file = GgufFile::open(path);
  EXPECT_EQ(file.name(), path.string());
  EXPECT_EQ(file.file_size(), std::filesystem::file_size(path));
  EXPECT_EQ(file.find("u16")->as_int(), 65535);
  // Moving the file keeps tensor pointers valid: they point into the mapping.
  const uint8_t* data = file.find_tensor("w")->data;
  GgufFile moved = std::move(file);
  EXPECT_EQ(moved.find_tensor("w")->data, data);
  std::vector<float> back(64);
  dequantize_row(GgmlType::Q8_0, data, back.data(), 64);
  for (size_t i = 0; i < 64; ++i) EXPECT_NEAR(back[i], values[i], 0.05f);
}

TEST(MappedFile, MissingFileIsAnIoErrorWithReason) {
  const std::string message = expect_gguf_error(
      GgufError::Kind::kIo, [] { (void)GgufFile::open("/nonexistent/dir/model.gguf"); });
  EXPECT_NE(message.find("/nonexistent/dir/model.gguf"), std::string::npos) << message;
  EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
}

TEST(MappedFile, DirectoryIsAnIoError) {
  const TempDir dir;
  const std::string message =
      expect_gguf_error(GgufError::Kind::kIo, [&] { (void)GgufFile::open(dir.path()); });
  EXPECT_NE(message.find("not a regular file"), std::string::npos) << message;
}

// open() on a FIFO blocks until a writer comes; the model is refused before it is opened.
TEST(MappedFile, FifoIsRefusedWithoutBlocking) {
  const TempDir dir;
  const auto path = dir.path() / "model.gguf";
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  const std::string message =
      expect_gguf_error(GgufError::Kind::kIo, [&] { (void)GgufFile::open(path); });
  EXPECT_NE(message.find(path.string() + " is a FIFO, not a regular file"), std::string::npos)
      << message;
}

TEST(MappedFile, SymlinkToACharacterDeviceIsRefused) {
  const TempDir dir;
  const auto path = dir.path() / "zero.gguf";
  std::filesystem::create_symlink("/dev/zero", path);
  const std::string message =
      expect_gguf_error(GgufError::Kind::kIo, [&] { (void)GgufFile::open(path); });
  EXPECT_NE(message.find("is a character device, not a regular file"), std::string::npos)
      << message;
}

TEST(MappedFile, EmptyFileIsTruncated) {
  const TempDir dir;
  const auto path = dir.path() / "empty.gguf";
  std::ofstream(path).close();
  const std::string message =
      expect_gguf_error(GgufError::Kind::kTruncated, [&] { (void)GgufFile::open(path); });
  EXPECT_NE(message.find("empty.gguf"), std::string::npos) << message;
  EXPECT_NE(message.find("empty"), std::string::npos) << message;
}

TEST(MappedFile, WriteToAnUnwritablePathIsAnIoError) {
  const std::string message = expect_gguf_error(
      GgufError::Kind::kIo, [] { GgufWriter().write("/nonexistent/dir/out.gguf"); });
  EXPECT_NE(message.find("/nonexistent/dir/out.gguf"), std::string::npos) << message;
  EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
}

}  // namespace
}  // namespace servescope::gguf
