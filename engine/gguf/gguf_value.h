// A GGUF metadata value: one of the thirteen GGUF value types, arrays (also of arrays)
// included, with checked accessors.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace servescope::gguf {

// Type ids as GGUF stores them; the order matches Value::data's alternatives.
enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// "uint8", ..., "float64"; "unknown" for ids outside the enum.
std::string_view value_type_name(ValueType type);

struct Value;

// A homogeneous array: every item has type element_type (items of an array of arrays are
// arrays themselves, each with its own element type).
struct Array {
  ValueType element_type = ValueType::kUint8;
  std::vector<Value> items;
};

struct Value {
  std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string,
               Array, uint64_t, int64_t, double>
      data;

  ValueType type() const { return static_cast<ValueType>(data.index()); }

  // Checked accessors: a value of another type throws GgufError(kMalformed) naming the
  // expected and the actual type.
  bool is_integer() const;
  int64_t as_int() const;   // any integer type; a uint64 above INT64_MAX throws
  double as_float() const;  // float32, float64 or any integer type
  bool as_bool() const;
  const std::string& as_string() const;
  const Array& as_array() const;

  static Value u8(uint8_t v) { return make<uint8_t>(v); }
  static Value i8(int8_t v) { return make<int8_t>(v); }
  static Value u16(uint16_t v) { return make<uint16_t>(v); }
  static Value i16(int16_t v) { return make<int16_t>(v); }
  static Value u32(uint32_t v) { return make<uint32_t>(v); }
  static Value i32(int32_t v) { return make<int32_t>(v); }
  static Value u64(uint64_t v) { return make<uint64_t>(v); }
  static Value i64(int64_t v) { return make<int64_t>(v); }
  static Value f32(float v) { return make<float>(v); }
  static Value f64(double v) { return make<double>(v); }
  static Value boolean(bool v) { return make<bool>(v); }
  static Value str(std::string v) { return make<std::string>(std::move(v)); }
  static Value array(ValueType element_type, std::vector<Value> items) {
    return make<Array>(Array{element_type, std::move(items)});
  }

 private:
  // Names the alternative explicitly, so that e.g. u8(1) never becomes a bool or an int.
  template <class T, class Arg>
  static Value make(Arg&& arg) {
    Value value;
    value.data.template emplace<T>(std::forward<Arg>(arg));
    return value;
  }
};

}  // namespace servescope::gguf
