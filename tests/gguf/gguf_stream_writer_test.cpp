// Streamed tensors: bytes produced while the file is written give the same file as bytes held
// in memory, whatever the chunking, and a producer that emits the wrong count is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <vector>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "tests/gguf/gguf_test_util.h"

namespace servescope::gguf {
namespace {

using testing::expect_gguf_error;

std::vector<uint8_t> counting_bytes(size_t n) {
  std::vector<uint8_t> bytes(n);
  std::iota(bytes.begin(), bytes.end(), uint8_t{3});
  return bytes;
}

// Emits `bytes` in chunks of `chunk` bytes.
GgufWriter::TensorProducer chunked(std::vector<uint8_t> bytes, size_t chunk) {
  return [bytes = std::move(bytes), chunk](const GgufWriter::ByteEmitter& emit) {
    for (size_t at = 0; at < bytes.size(); at += chunk) {
      emit(std::span<const uint8_t>(bytes.data() + at, std::min(chunk, bytes.size() - at)));
    }
  };
}

GgufWriter writer_with(bool streamed, size_t chunk) {
  GgufWriter writer;
  writer.set("general.alignment", Value::u32(64));
  const std::vector<uint8_t> q8 = counting_bytes(3 * 34);  // 3 rows of one Q8_0 block
  const std::vector<uint8_t> f32 = counting_bytes(5 * 4);
  if (streamed) {
    writer.add_tensor_streamed("a", GgmlType::Q8_0, {32, 3}, chunked(q8, chunk));
    writer.add_tensor_streamed("b", GgmlType::F32, {5}, chunked(f32, chunk));
  } else {
    writer.add_tensor("a", GgmlType::Q8_0, {32, 3}, q8);
    writer.add_tensor("b", GgmlType::F32, {5}, f32);
  }
  return writer;
}

TEST(GgufStreamWriter, StreamedTensorsGiveTheSameFileAsHeldOnes) {
  const std::vector<uint8_t> held = writer_with(false, 0).to_bytes();
  for (const size_t chunk : {1, 7, 34, 1000}) {
    EXPECT_EQ(writer_with(true, chunk).to_bytes(), held) << chunk;
  }
  const GgufFile file = GgufFile::from_bytes(held, "held");
  ASSERT_EQ(file.tensors().size(), 2u);
  EXPECT_EQ(file.find_tensor("a")->data[0], 3);
}

TEST(GgufStreamWriter, WriteToDiskMatchesToBytes) {
  const GgufWriter writer = writer_with(true, 5);
  const std::filesystem::path path =
      std::filesystem::path(::testing::TempDir()) / "gguf_stream_writer_test.gguf";
  writer.write(path);
  const std::vector<uint8_t> expected = writer.to_bytes();
  std::vector<uint8_t> actual(std::filesystem::file_size(path));
  std::FILE* in = std::fopen(path.c_str(), "rb");
  ASSERT_NE(in, nullptr);
  ASSERT_EQ(std::fread(actual.data(), 1, actual.size(), in), actual.size());
  std::fclose(in);
  std::filesystem::remove(path);
  EXPECT_EQ(actual, expected);
}

TEST(GgufStreamWriter, RefusesAProducerThatEmitsTheWrongCount) {
  GgufWriter writer;
  writer.add_tensor_streamed("short", GgmlType::F32, {4}, chunked(counting_bytes(12), 4));
  const std::string message =
      expect_gguf_error(GgufError::Kind::kMalformed, [&] { (void)writer.to_bytes(); });
  EXPECT_NE(message.find("produced 12 bytes, expected 16"), std::string::npos) << message;
  expect_gguf_error(GgufError::Kind::kMalformed, [&] {
    writer.add_tensor_streamed("short", GgmlType::F32, {4}, chunked({}, 1));
  });
  expect_gguf_error(GgufError::Kind::kMalformed, [&] {
    writer.add_tensor_streamed("odd", GgmlType::Q4_0, {31}, chunked({}, 1));
  });
}

}  // namespace
}  // namespace servescope::gguf
