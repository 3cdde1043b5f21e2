#include "engine/gguf/gguf_value.h"

#include <cstdint>
#include <limits>

#include "engine/core/error.h"

namespace servescope::gguf {
namespace {

[[noreturn]] void throw_wrong_type(std::string_view expected, ValueType actual) {
  throw GgufError(GgufError::Kind::kMalformed, "GGUF metadata value: expected " +
                                                   std::string(expected) + ", found " +
                                                   std::string(value_type_name(actual)));
}

}  // namespace

std::string_view value_type_name(ValueType type) {
  switch (type) {
    case ValueType::kUint8:
      return "uint8";
    case ValueType::kInt8:
      return "int8";
    case ValueType::kUint16:
      return "uint16";
    case ValueType::kInt16:
      return "int16";
    case ValueType::kUint32:
      return "uint32";
    case ValueType::kInt32:
      return "int32";
    case ValueType::kFloat32:
      return "float32";
    case ValueType::kBool:
      return "bool";
    case ValueType::kString:
      return "string";
    case ValueType::kArray:
      return "array";
    case ValueType::kUint64:
      return "uint64";
    case ValueType::kInt64:
      return "int64";
    case ValueType::kFloat64:
      return "float64";
  }
  return "unknown";
}

bool Value::is_integer() const {
  switch (type()) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kUint16:
    case ValueType::kInt16:
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kUint64:
    case ValueType::kInt64:
      return true;
    default:
      return false;
  }
}

int64_t Value::as_int() const {
  if (const auto* big = std::get_if<uint64_t>(&data)) {
    if (*big > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      throw GgufError(GgufError::Kind::kMalformed, "GGUF metadata value: uint64 " +
                                                       std::to_string(*big) +
                                                       " does not fit in a signed 64-bit integer");
    }
    return static_cast<int64_t>(*big);
  }
  if (!is_integer()) throw_wrong_type("an integer", type());
  return std::visit(
      [](const auto& v) -> int64_t {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          return static_cast<int64_t>(v);
        } else {
          return 0;  // unreachable: is_integer() checked above
        }
      },
      data);
}

double Value::as_float() const {
  if (const auto* f = std::get_if<float>(&data)) return static_cast<double>(*f);
  if (const auto* d = std::get_if<double>(&data)) return *d;
  if (const auto* big = std::get_if<uint64_t>(&data)) return static_cast<double>(*big);
  if (!is_integer()) throw_wrong_type("a number", type());
  return static_cast<double>(as_int());
}

bool Value::as_bool() const {
  if (const auto* b = std::get_if<bool>(&data)) return *b;
  throw_wrong_type("bool", type());
}

const std::string& Value::as_string() const {
  if (const auto* s = std::get_if<std::string>(&data)) return *s;
  throw_wrong_type("string", type());
}

const Array& Value::as_array() const {
  if (const auto* a = std::get_if<Array>(&data)) return *a;
  throw_wrong_type("array", type());
}

}  // namespace servescope::gguf
