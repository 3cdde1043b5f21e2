#include "engine/gguf/byte_cursor.h"

namespace servescope::gguf {

std::string ByteCursor::read_string(std::string_view field) {
  const auto length = read<uint64_t>(field);
  if (length > remaining()) {
    fail(GgufError::Kind::kTruncated, std::string(field) + " has length " + std::to_string(length) +
                                          " but only " + std::to_string(remaining()) +
                                          " bytes remain in the file");
  }
  std::string text(reinterpret_cast<const char*>(bytes_.data() + position_),
                   static_cast<size_t>(length));
  position_ += static_cast<size_t>(length);
  return text;
}

uint64_t ByteCursor::read_count(std::string_view field, uint64_t min_item_bytes) {
  const auto count = read<uint64_t>(field);
  if (count > remaining() / min_item_bytes) {
    fail(GgufError::Kind::kMalformed,
         std::string(field) + " is " + std::to_string(count) + ", but only " +
             std::to_string(remaining()) + " bytes remain and each item needs at least " +
             std::to_string(min_item_bytes) + "; the count is wrong or the file is truncated");
  }
  return count;
}

void ByteCursor::fail(GgufError::Kind kind, const std::string& what) const {
  throw GgufError(kind, file_name_ + ": " + item_ + ": " + what + " (at byte " +
                            std::to_string(position_) + ")");
}

void ByteCursor::require(uint64_t n, std::string_view field) const {
  if (n > remaining()) {
    fail(GgufError::Kind::kTruncated, "file ends while reading " + std::string(field) +
                                          ": expected " + std::to_string(n) + " bytes, " +
                                          std::to_string(remaining()) + " remain");
  }
}

}  // namespace servescope::gguf
