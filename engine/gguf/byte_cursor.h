// A bounds-checked, little-endian reader over a byte span. Every read checks the remaining
// bytes first; a short read throws GgufError(kTruncated) naming the file, the byte offset,
// the item being read and what was expected.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "engine/core/error.h"

namespace servescope::gguf {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader assumes a little-endian host");

class ByteCursor {
 public:
  ByteCursor(std::span<const uint8_t> bytes, const std::string& file_name)
      : bytes_(bytes), file_name_(file_name) {}

  size_t position() const { return position_; }
  size_t remaining() const { return bytes_.size() - position_; }

  // Names the item being read ("metadata key 'general.name'"), for error messages.
  void set_item(std::string item) { item_ = std::move(item); }
  const std::string& item() const { return item_; }

  template <class T>
  T read(std::string_view field) {
    static_assert(std::is_trivially_copyable_v<T>);
    require(sizeof(T), field);
    T value;
    std::memcpy(&value, bytes_.data() + position_, sizeof(T));
    position_ += sizeof(T);
    return value;
  }

  // A GGUF string: uint64 length, then that many bytes (not NUL-terminated).
  std::string read_string(std::string_view field);

  // A uint64 count of items that need at least `min_item_bytes` each; a count that cannot
  // fit in the remaining bytes throws kMalformed before anyone reserves memory for it.
  uint64_t read_count(std::string_view field, uint64_t min_item_bytes);

  // Throws GgufError(kind) with "<file>: <item>: <what> (at byte N)".
  [[noreturn]] void fail(GgufError::Kind kind, const std::string& what) const;

 private:
  void require(uint64_t n, std::string_view field) const;

  std::span<const uint8_t> bytes_;
  const std::string& file_name_;
  size_t position_ = 0;
  std::string item_ = "header";
};

}  // namespace servescope::gguf
