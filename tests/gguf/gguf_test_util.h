// Helpers for the GGUF tests: a hand-rolled little-endian byte builder (independent of the
// writer, for crafting broken files) and assertions on GgufError.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "engine/core/error.h"

namespace servescope::gguf::testing {

class RawBytes {
 public:
  template <class T>
  RawBytes& put(T value) {
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    bytes.insert(bytes.end(), p, p + sizeof(T));
    return *this;
  }
  RawBytes& u32(uint32_t v) { return put(v); }
  RawBytes& u64(uint64_t v) { return put(v); }
  RawBytes& str(const std::string& s) {
    u64(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  RawBytes& header(uint32_t version, uint64_t n_tensors, uint64_t n_metadata) {
    bytes.insert(bytes.end(), {'G', 'G', 'U', 'F'});
    return u32(version).u64(n_tensors).u64(n_metadata);
  }
  RawBytes& pad_to(size_t alignment) {
    bytes.resize((bytes.size() + alignment - 1) / alignment * alignment, 0);
    return *this;
  }
  std::vector<uint8_t> bytes;
};

// Runs `action`, expects a GgufError of `kind` and returns its message.
inline std::string expect_gguf_error(GgufError::Kind kind, const std::function<void()>& action) {
  try {
    action();
  } catch (const GgufError& error) {
    EXPECT_EQ(static_cast<int>(error.kind()), static_cast<int>(kind)) << error.what();
    return error.what();
  } catch (const std::exception& error) {
    ADD_FAILURE() << "expected GgufError, got another exception: " << error.what();
    return {};
  }
  ADD_FAILURE() << "expected GgufError, nothing was thrown";
  return {};
}

template <class T>
void overwrite(std::vector<uint8_t>& bytes, size_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof(T));
}

}  // namespace servescope::gguf::testing
