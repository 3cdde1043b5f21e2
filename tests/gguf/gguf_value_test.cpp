#include "engine/gguf/gguf_value.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "engine/core/error.h"
#include "tests/gguf/gguf_test_util.h"

namespace servescope::gguf {
namespace {

using testing::expect_gguf_error;

TEST(Value, ConstructorsPickTheNamedType) {
  EXPECT_EQ(Value::u8(1).type(), ValueType::kUint8);
  EXPECT_EQ(Value::i8(1).type(), ValueType::kInt8);
  EXPECT_EQ(Value::u16(1).type(), ValueType::kUint16);
  EXPECT_EQ(Value::i16(1).type(), ValueType::kInt16);
  EXPECT_EQ(Value::u32(1).type(), ValueType::kUint32);
  EXPECT_EQ(Value::i32(1).type(), ValueType::kInt32);
  EXPECT_EQ(Value::u64(1).type(), ValueType::kUint64);
  EXPECT_EQ(Value::i64(1).type(), ValueType::kInt64);
  EXPECT_EQ(Value::f32(1).type(), ValueType::kFloat32);
  EXPECT_EQ(Value::f64(1).type(), ValueType::kFloat64);
  EXPECT_EQ(Value::boolean(true).type(), ValueType::kBool);
  EXPECT_EQ(Value::str("x").type(), ValueType::kString);
  EXPECT_EQ(Value::array(ValueType::kInt32, {}).type(), ValueType::kArray);
}

TEST(Value, IntegerAccessors) {
  EXPECT_EQ(Value::u8(200).as_int(), 200);
  EXPECT_EQ(Value::i8(-100).as_int(), -100);
  EXPECT_EQ(Value::u32(4000000000u).as_int(), 4000000000);
  EXPECT_EQ(Value::i64(std::numeric_limits<int64_t>::min()).as_int(),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(Value::u64(uint64_t{1} << 62).as_int(), int64_t{1} << 62);
  EXPECT_TRUE(Value::u16(1).is_integer());
  EXPECT_FALSE(Value::boolean(true).is_integer());
  EXPECT_FALSE(Value::f32(1).is_integer());
  const std::string message = expect_gguf_error(GgufError::Kind::kMalformed, [] {
    (void)Value::u64(std::numeric_limits<uint64_t>::max()).as_int();
  });
  EXPECT_NE(message.find("18446744073709551615"), std::string::npos) << message;
}

TEST(Value, FloatAccessorAcceptsFloatsAndIntegers) {
  EXPECT_DOUBLE_EQ(Value::f32(0.5f).as_float(), 0.5);
  EXPECT_DOUBLE_EQ(Value::f64(0.1).as_float(), 0.1);
  EXPECT_DOUBLE_EQ(Value::i32(-3).as_float(), -3.0);
  EXPECT_DOUBLE_EQ(Value::u64(std::numeric_limits<uint64_t>::max()).as_float(),
                   18446744073709551615.0);
  EXPECT_THROW((void)Value::str("1").as_float(), GgufError);
}

TEST(Value, WrongTypeNamesExpectedAndActual) {
  std::string message =
      expect_gguf_error(GgufError::Kind::kMalformed, [] { (void)Value::u32(5).as_string(); });
  EXPECT_NE(message.find("expected string"), std::string::npos) << message;
  EXPECT_NE(message.find("found uint32"), std::string::npos) << message;
  message = expect_gguf_error(GgufError::Kind::kMalformed, [] { (void)Value::str("x").as_int(); });
  EXPECT_NE(message.find("found string"), std::string::npos) << message;
  message = expect_gguf_error(GgufError::Kind::kMalformed, [] { (void)Value::i8(1).as_bool(); });
  EXPECT_NE(message.find("expected bool"), std::string::npos) << message;
  message = expect_gguf_error(GgufError::Kind::kMalformed, [] { (void)Value::f64(1).as_array(); });
  EXPECT_NE(message.find("found float64"), std::string::npos) << message;
}

TEST(Value, OtherAccessors) {
  EXPECT_TRUE(Value::boolean(true).as_bool());
  EXPECT_EQ(Value::str("hi").as_string(), "hi");
  const Value nested =
      Value::array(ValueType::kArray, {Value::array(ValueType::kInt8, {Value::i8(1)})});
  ASSERT_EQ(nested.as_array().items.size(), 1u);
  EXPECT_EQ(nested.as_array().items[0].as_array().items[0].as_int(), 1);
}

TEST(Value, TypeNames) {
  EXPECT_EQ(value_type_name(ValueType::kUint8), "uint8");
  EXPECT_EQ(value_type_name(ValueType::kFloat64), "float64");
  EXPECT_EQ(value_type_name(ValueType::kArray), "array");
  EXPECT_EQ(value_type_name(static_cast<ValueType>(13)), "unknown");
}

}  // namespace
}  // namespace servescope::gguf
