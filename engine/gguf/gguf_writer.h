// Builds a GGUF file (v2 or v3) in memory: metadata, then tensors placed at aligned offsets.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/gguf/ggml_types.h"
#include "engine/gguf/gguf_value.h"

namespace servescope::gguf {

class GgufWriter {
 public:
  // Throws GgufError(kUnsupportedVersion) for versions other than 2 and 3.
  explicit GgufWriter(uint32_t version = 3);

  // Adds or replaces a key (kept at its first position). "general.alignment" must be a
  // uint32 power of two and sets the alignment (default 32); else GgufError(kMalformed).
  // Arrays whose items do not match their element type also throw kMalformed.
  void set(std::string key, Value value);

  // Adds a tensor with already encoded bytes. Throws GgufError: kMalformed for a duplicate
  // name, a shape that is not 1..4 positive dims, a row length that is not a multiple of the
  // block size or bytes.size() != row_bytes(type, shape[0]) * rows; kUnsupportedTensorType
  // for types other than F32, F16, Q8_0, Q4_0.
  void add_tensor(std::string name, GgmlType type, std::vector<int64_t> shape,
                  std::vector<uint8_t> bytes);
  // Same, encoding `values` (row-major, shape[0] contiguous) with quantize_row.
  void add_tensor_f32(std::string name, GgmlType type, std::vector<int64_t> shape,
                      std::span<const float> values);

  std::vector<uint8_t> to_bytes() const;
  // Throws GgufError(kIo) naming the path and the system's reason on failure.
  void write(const std::filesystem::path& path) const;

 private:
  struct PendingTensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
  };

  uint32_t version_;
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace servescope::gguf
