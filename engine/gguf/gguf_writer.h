// Builds a GGUF file (v2 or v3): metadata, then tensors placed at aligned offsets. Tensors are
// either held in memory or streamed: their bytes produced while the file is written.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
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
  // for types gguf::is_supported refuses.
  void add_tensor(std::string name, GgmlType type, std::vector<int64_t> shape,
                  std::vector<uint8_t> bytes);
  // Same, encoding `values` (row-major, shape[0] contiguous) with quantize_row.
  void add_tensor_f32(std::string name, GgmlType type, std::vector<int64_t> shape,
                      std::span<const float> values);

  // Receives a streamed tensor's encoded bytes, in order, in chunks of any size.
  using ByteEmitter = std::function<void(std::span<const uint8_t> chunk)>;
  // Emits a tensor's encoded bytes; called once each time the file is written.
  using TensorProducer = std::function<void(const ByteEmitter& emit)>;
  // Adds a tensor whose bytes `produce` emits while the file is written, so a model larger than
  // memory never exists in it. add_tensor's checks apply to the shape; writing throws
  // GgufError(kMalformed) if the producer emits a different number of bytes.
  void add_tensor_streamed(std::string name, GgmlType type, std::vector<int64_t> shape,
                           TensorProducer produce);

  std::vector<uint8_t> to_bytes() const;
  // Writes front to back without assembling the file in memory. Throws GgufError(kIo) naming
  // the path and the system's reason on failure.
  void write(const std::filesystem::path& path) const;

  // The byte sink serialize() writes to (a vector or a file).
  class Sink;

 private:
  struct PendingTensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> shape;
    uint64_t n_bytes;
    std::vector<uint8_t> bytes;  // empty when streamed
    TensorProducer produce;      // set when streamed
  };

  void check_new_name(const std::string& name) const;
  void serialize(Sink& sink) const;

  uint32_t version_;
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace servescope::gguf
