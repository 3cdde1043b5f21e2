// A GGUF file (v2 or v3, little-endian), memory-mapped read-only and validated on open:
// metadata in file order, tensor infos with pointers straight into the mapping.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/gguf/ggml_types.h"
#include "engine/gguf/gguf_value.h"

namespace servescope::gguf {

struct TensorInfo {
  std::string name;
  // GGML order: shape[0] = ne0 = the contiguous row length; a PyTorch [out, in] matrix has
  // shape {in, out}.
  std::vector<int64_t> shape;
  GgmlType type = GgmlType::F32;
  uint64_t offset = 0;            // relative to the start of the data section
  uint64_t n_bytes = 0;           // row_bytes(type, shape[0]) * rows()
  const uint8_t* data = nullptr;  // into the mapping; valid while the GgufFile lives

  int64_t n_elements() const;
  int64_t rows() const;  // product of shape[1..]; 1 for a vector
};

class GgufFile {
 public:
  // Maps `path` read-only and validates it. Messages name the file by the path string.
  // Throws GgufError of the matching kind on anything unreadable, malformed or unsupported.
  static GgufFile open(const std::filesystem::path& path);
  // Same, on a copy of bytes owned by the GgufFile (tests, fuzzer); `name` is for messages.
  static GgufFile from_bytes(std::vector<uint8_t> bytes, std::string name);

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;
  ~GgufFile();

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t file_size() const;

  const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }
  const Value* find(std::string_view key) const;  // nullptr if absent

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;  // nullptr if absent

  // The bytes behind the file: an mmap or an owned buffer. Stays put when GgufFile moves,
  // so TensorInfo::data remains valid.
  class Storage;

 private:
  GgufFile(std::unique_ptr<Storage> storage, std::string name);
  void parse();

  std::unique_ptr<Storage> storage_;
  std::string name_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 0;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::map<std::string, size_t, std::less<>> metadata_index_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace servescope::gguf
