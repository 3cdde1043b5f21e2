// Broken, hostile and unsupported files: each must raise a GgufError of the right kind whose
// message names the file, the item at fault and what was expected. None may crash.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "tests/gguf/gguf_test_util.h"

namespace servescope::gguf {
namespace {

using testing::expect_gguf_error;
using testing::overwrite;
using testing::RawBytes;
using Kind = GgufError::Kind;

constexpr uint32_t kString = static_cast<uint32_t>(ValueType::kString);
constexpr uint32_t kArray = static_cast<uint32_t>(ValueType::kArray);
constexpr uint32_t kUint32 = static_cast<uint32_t>(ValueType::kUint32);
constexpr uint32_t kQ8_0 = static_cast<uint32_t>(GgmlType::Q8_0);
constexpr uint32_t kF32 = static_cast<uint32_t>(GgmlType::F32);

std::string load_error(Kind kind, const std::vector<uint8_t>& bytes,
                       const std::string& name = "bad.gguf") {
  return expect_gguf_error(kind, [&] { (void)GgufFile::from_bytes(bytes, name); });
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "message: " << (haystack)

// One metadata string and one tensor; returns the bytes and records patchable offsets.
struct SmallFile {
  std::vector<uint8_t> bytes;
  size_t n_dims_at = 0;
  size_t dim0_at = 0;
  size_t type_at = 0;
  size_t offset_at = 0;
};

SmallFile small_file(uint32_t tensor_type = kQ8_0, uint64_t row = 32, size_t data_bytes = 34) {
  SmallFile file;
  RawBytes raw;
  raw.header(3, 1, 1).str("general.name").u32(kString).str("m");
  raw.str("blk.0.w");
  file.n_dims_at = raw.bytes.size();
  raw.u32(1);
  file.dim0_at = raw.bytes.size();
  raw.u64(row);
  file.type_at = raw.bytes.size();
  raw.u32(tensor_type);
  file.offset_at = raw.bytes.size();
  raw.u64(0).pad_to(32);
  raw.bytes.resize(raw.bytes.size() + data_bytes, 0x11);
  file.bytes = raw.bytes;
  return file;
}

TEST(BadInput, SmallFileIsValid) {
  const GgufFile file = GgufFile::from_bytes(small_file().bytes, "ok.gguf");
  EXPECT_EQ(file.tensors().at(0).n_bytes, 34u);
}

TEST(BadInput, WrongMagic) {
  std::vector<uint8_t> bytes = small_file().bytes;
  bytes[0] = 'P';
  const std::string message = load_error(Kind::kBadMagic, bytes, "model.bin");
  EXPECT_CONTAINS(message, "model.bin: not a GGUF file");
  EXPECT_CONTAINS(message, "'GGUF'");
}

TEST(BadInput, VersionOneAndFourAreUnsupported) {
  for (uint32_t version : {1u, 4u}) {
    std::vector<uint8_t> bytes = small_file().bytes;
    overwrite<uint32_t>(bytes, 4, version);
    const std::string message = load_error(Kind::kUnsupportedVersion, bytes, "old.gguf");
    EXPECT_EQ(message, "old.gguf: GGUF version " + std::to_string(version) +
                           " is not supported; supported: 2, 3");
  }
}

TEST(BadInput, BigEndianFileGetsAHint) {
  std::vector<uint8_t> bytes = small_file().bytes;
  overwrite<uint32_t>(bytes, 4, 0x03000000u);
  EXPECT_CONTAINS(load_error(Kind::kUnsupportedVersion, bytes), "big-endian");
}

// Every prefix of a valid file that lacks a needed byte must fail cleanly with a GgufError
// naming the file; the prefixes that only drop trailing padding still load.
TEST(BadInput, EveryTruncationThrows) {
  GgufWriter writer(3);
  writer.set("general.architecture", Value::str("llama"));
  writer.set("n", Value::u32(7));
  writer.set("f", Value::f64(0.5));
  writer.set("b", Value::boolean(true));
  writer.set("nested", Value::array(ValueType::kArray,
                                    {Value::array(ValueType::kString, {Value::str("x")})}));
  writer.add_tensor_f32("a", GgmlType::Q4_0, {32, 2}, std::vector<float>(64, 1.0f));
  writer.add_tensor_f32("b", GgmlType::F16, {3}, std::vector<float>{1, 2, 3});
  const std::vector<uint8_t> bytes = writer.to_bytes();
  // The writer pads the last tensor (6 bytes of F16) to the 32-byte alignment.
  const size_t needed = bytes.size() - (32 - 6);
  ASSERT_NO_THROW((void)GgufFile::from_bytes(bytes, "full.gguf"));

  for (size_t length = 0; length < bytes.size(); ++length) {
    const std::vector<uint8_t> prefix(bytes.begin(),
                                      bytes.begin() + static_cast<ptrdiff_t>(length));
    if (length >= needed) {
      EXPECT_NO_THROW((void)GgufFile::from_bytes(prefix, "cut.gguf")) << length;
      continue;
    }
    try {
      (void)GgufFile::from_bytes(prefix, "cut.gguf");
      ADD_FAILURE() << "a prefix of " << length << " bytes loaded";
    } catch (const GgufError& error) {
      EXPECT_EQ(std::string(error.what()).rfind("cut.gguf: ", 0), 0u) << error.what();
    }
  }
}

TEST(BadInput, EmptyAndTinyFilesAreTruncated) {
  EXPECT_CONTAINS(load_error(Kind::kTruncated, {}, "empty.gguf"), "empty.gguf: the file is empty");
  const std::string message = load_error(Kind::kTruncated, {'G', 'G', 'U', 'F', 3, 0});
  EXPECT_CONTAINS(message, "bad.gguf: header: file ends while reading the version");
}

TEST(BadInput, TruncatedMetadataNamesTheKey) {
  RawBytes raw;
  raw.header(3, 0, 1).str("general.name").u32(kString).u64(100);
  raw.bytes.resize(raw.bytes.size() + 10, 'x');
  const std::string message = load_error(Kind::kTruncated, raw.bytes);
  EXPECT_CONTAINS(message, "bad.gguf: metadata key 'general.name'");
  EXPECT_CONTAINS(message, "length 100 but only 10 bytes remain");
}

TEST(BadInput, TensorOutOfBounds) {
  SmallFile file = small_file();
  overwrite<uint64_t>(file.bytes, file.offset_at, 4096);
  std::string message = load_error(Kind::kTensorOutOfBounds, file.bytes, "model.gguf");
  EXPECT_CONTAINS(message, "model.gguf: tensor blk.0.w: needs 34 bytes at data offset 4096");
  EXPECT_CONTAINS(message, "the file has only");

  // Data cut short by one byte.
  file = small_file();
  file.bytes.pop_back();
  message = load_error(Kind::kTensorOutOfBounds, file.bytes);
  EXPECT_CONTAINS(message, "tensor blk.0.w");

  // An offset near 2^64 must not wrap around into the file.
  file = small_file();
  overwrite<uint64_t>(file.bytes, file.offset_at, std::numeric_limits<uint64_t>::max() - 31);
  load_error(Kind::kTensorOutOfBounds, file.bytes);
}

TEST(BadInput, UnsupportedTensorTypeMessage) {
  // IQ4_XS: 256 elements per 136-byte block.
  RawBytes raw;
  raw.header(3, 1, 0).str("blk.3.attn_q.weight").u32(2).u64(256).u64(4);
  raw.u32(static_cast<uint32_t>(GgmlType::IQ4_XS)).u64(0).pad_to(32);
  raw.bytes.resize(raw.bytes.size() + 136 * 4);
  EXPECT_EQ(load_error(Kind::kUnsupportedTensorType, raw.bytes, "model.gguf"),
            "model.gguf: tensor blk.3.attn_q.weight has type IQ4_XS, which ServeScope does not "
            "load; supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, "
            "Q5_K, Q6_K");
}

TEST(BadInput, UnknownTensorTypeId) {
  SmallFile file = small_file();
  overwrite<uint32_t>(file.bytes, file.type_at, 99);
  EXPECT_EQ(load_error(Kind::kUnsupportedTensorType, file.bytes, "model.gguf"),
            "model.gguf: tensor blk.0.w has unknown type id 99, which ServeScope does not "
            "load; supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, "
            "Q5_K, Q6_K");
}

// The writer refuses bad alignments, so these files are built by hand.
std::vector<uint8_t> file_with_alignment(const Value& alignment) {
  RawBytes raw;
  raw.header(3, 0, 2).str("general.name").u32(kString).str("x");
  raw.str("general.alignment").u32(static_cast<uint32_t>(alignment.type()));
  if (const auto* u32 = std::get_if<uint32_t>(&alignment.data)) raw.u32(*u32);
  if (const auto* u64 = std::get_if<uint64_t>(&alignment.data)) raw.u64(*u64);
  return raw.bytes;
}

TEST(BadInput, BadAlignment) {
  for (uint32_t alignment : {0u, 3u, 48u}) {
    const std::string message =
        load_error(Kind::kMalformed, file_with_alignment(Value::u32(alignment)));
    EXPECT_CONTAINS(message, "bad.gguf: metadata key 'general.alignment'");
    EXPECT_CONTAINS(message,
                    "is " + std::to_string(alignment) + "; expected a non-zero power of two");
  }
  const std::string message = load_error(Kind::kMalformed, file_with_alignment(Value::u64(32)));
  EXPECT_CONTAINS(message, "has type uint64; expected uint32");
}

TEST(BadInput, AbsurdCountsFailFastWithoutAllocating) {
  RawBytes tensors;
  tensors.header(3, uint64_t{1} << 60, 0);
  EXPECT_CONTAINS(load_error(Kind::kMalformed, tensors.bytes),
                  "declares 1152921504606846976 tensors");

  RawBytes entries;
  entries.header(3, 0, uint64_t{1} << 60);
  EXPECT_CONTAINS(load_error(Kind::kMalformed, entries.bytes),
                  "1152921504606846976 metadata entries");

  RawBytes array;
  array.header(3, 0, 1).str("tokens").u32(kArray).u32(kString).u64(uint64_t{1} << 60);
  std::string message = load_error(Kind::kMalformed, array.bytes);
  EXPECT_CONTAINS(message, "metadata key 'tokens': the array length is 1152921504606846976");

  RawBytes string;
  string.header(3, 0, 1).str("k").u32(kString).u64(std::numeric_limits<uint64_t>::max());
  message = load_error(Kind::kTruncated, string.bytes);
  EXPECT_CONTAINS(message, "metadata key 'k'");

  RawBytes key;
  key.header(3, 0, 1).u64(uint64_t{1} << 62).u32(0).u32(0);
  EXPECT_CONTAINS(load_error(Kind::kTruncated, key.bytes), "metadata entry #0: the key has length");
}

TEST(BadInput, DuplicateKey) {
  RawBytes raw;
  raw.header(3, 0, 2)
      .str("general.name")
      .u32(kUint32)
      .u32(1)
      .str("general.name")
      .u32(kUint32)
      .u32(2);
  EXPECT_CONTAINS(load_error(Kind::kMalformed, raw.bytes),
                  "bad.gguf: metadata key 'general.name': duplicate key");
}

TEST(BadInput, DuplicateTensorName) {
  RawBytes raw;
  raw.header(3, 2, 0);
  raw.str("w").u32(1).u64(8).u32(kF32).u64(0);
  raw.str("w").u32(1).u64(8).u32(kF32).u64(32).pad_to(32);
  raw.bytes.resize(raw.bytes.size() + 64);
  EXPECT_CONTAINS(load_error(Kind::kMalformed, raw.bytes),
                  "bad.gguf: tensor w: duplicate tensor name");
}

TEST(BadInput, BadDimensions) {
  for (uint32_t n_dims : {0u, 5u}) {
    SmallFile file = small_file();
    overwrite<uint32_t>(file.bytes, file.n_dims_at, n_dims);
    const std::string message = load_error(Kind::kMalformed, file.bytes);
    EXPECT_CONTAINS(
        message, "tensor blk.0.w: has " + std::to_string(n_dims) + " dimensions; expected 1 to 4");
  }
  SmallFile zero = small_file();
  overwrite<uint64_t>(zero.bytes, zero.dim0_at, 0);
  EXPECT_CONTAINS(load_error(Kind::kMalformed, zero.bytes), "dimension 0 is 0");

  RawBytes overflow;
  overflow.header(3, 1, 0)
      .str("big")
      .u32(3)
      .u64(uint64_t{1} << 31)
      .u64(uint64_t{1} << 31)
      .u64(uint64_t{1} << 31);
  overflow.u32(kF32).u64(0);
  EXPECT_CONTAINS(load_error(Kind::kMalformed, overflow.bytes),
                  "tensor big: the element count overflows");

  RawBytes huge_dim;
  huge_dim.header(3, 1, 0)
      .str("big")
      .u32(1)
      .u64(std::numeric_limits<uint64_t>::max())
      .u32(kF32)
      .u64(0);
  EXPECT_CONTAINS(load_error(Kind::kMalformed, huge_dim.bytes),
                  "dimension 0 is 18446744073709551615");

  // Fits in int64 elements but not in bytes.
  RawBytes bytes_overflow;
  bytes_overflow.header(3, 1, 0).str("big").u32(2).u64(uint64_t{1} << 40).u64(uint64_t{1} << 22);
  bytes_overflow.u32(kF32).u64(0);
  EXPECT_CONTAINS(load_error(Kind::kMalformed, bytes_overflow.bytes),
                  "tensor big: the byte size overflows");
}

TEST(BadInput, RowLengthNotAMultipleOfTheBlock) {
  SmallFile file = small_file(kQ8_0, 33, 68);
  EXPECT_CONTAINS(load_error(Kind::kMalformed, file.bytes),
                  "tensor blk.0.w: row length 33 is not a multiple of the Q8_0 block size 32");
}

TEST(BadInput, MisalignedTensorOffset) {
  SmallFile file = small_file(kF32, 1, 64);
  overwrite<uint64_t>(file.bytes, file.offset_at, 4);
  EXPECT_CONTAINS(load_error(Kind::kMalformed, file.bytes),
                  "tensor blk.0.w: data offset 4 is not a multiple of the alignment 32");
}

TEST(BadInput, OverlappingTensors) {
  RawBytes raw;
  raw.header(3, 2, 0);
  raw.str("first").u32(1).u64(16).u32(kF32).u64(0);
  raw.str("second").u32(1).u64(8).u32(kF32).u64(32).pad_to(32);
  raw.bytes.resize(raw.bytes.size() + 64);
  EXPECT_CONTAINS(load_error(Kind::kMalformed, raw.bytes),
                  "tensor second overlaps the data of tensor first");
}

TEST(BadInput, BadValueTypeIdAndBool) {
  RawBytes type;
  type.header(3, 0, 1).str("k").u32(13).u32(0);
  EXPECT_CONTAINS(load_error(Kind::kMalformed, type.bytes),
                  "metadata key 'k': the value type is 13; expected a GGUF value type id 0..12");

  RawBytes element_type;
  element_type.header(3, 0, 1).str("k").u32(kArray).u32(77).u64(0);
  EXPECT_CONTAINS(load_error(Kind::kMalformed, element_type.bytes), "the array element type is 77");

  RawBytes boolean;
  boolean.header(3, 0, 1).str("flag").u32(static_cast<uint32_t>(ValueType::kBool)).put<uint8_t>(2);
  EXPECT_CONTAINS(load_error(Kind::kMalformed, boolean.bytes),
                  "metadata key 'flag': bool value is 2; expected 0 or 1");
}

TEST(BadInput, ArrayNestingIsBounded) {
  auto nested = [](int depth) {
    RawBytes raw;
    raw.header(3, 0, 1).str("deep").u32(kArray);
    for (int i = 1; i < depth; ++i) raw.u32(kArray).u64(1);
    raw.u32(kUint32).u64(1).u32(5);
    return raw.bytes;
  };
  const GgufFile ok = GgufFile::from_bytes(nested(8), "ok.gguf");
  EXPECT_EQ(ok.find("deep")->type(), ValueType::kArray);
  EXPECT_CONTAINS(load_error(Kind::kMalformed, nested(9)), "arrays nested deeper than 8 levels");
  // Far deeper than the limit: must fail, not overflow the stack.
  load_error(Kind::kMalformed, nested(100000));
}

}  // namespace
}  // namespace servescope::gguf
