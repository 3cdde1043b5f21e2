#include "engine/gguf/gguf_writer.h"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "engine/core/error.h"
#include "engine/gguf/gguf_format.h"

namespace servescope::gguf {
namespace {

using Kind = GgufError::Kind;

// Appends little-endian encodings to a byte vector.
class ByteSink {
 public:
  template <class T>
  void put(T value) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(&value);
    out_.insert(out_.end(), bytes, bytes + sizeof(T));
  }
  void put_string(const std::string& text) {
    put<uint64_t>(text.size());
    out_.insert(out_.end(), text.begin(), text.end());
  }
  void put_bytes(const std::vector<uint8_t>& bytes) {
    out_.insert(out_.end(), bytes.begin(), bytes.end());
  }
  void pad_to(uint64_t alignment) {
    out_.resize((out_.size() + alignment - 1) / alignment * alignment, 0);
  }
  size_t size() const { return out_.size(); }
  std::vector<uint8_t> take() { return std::move(out_); }

 private:
  std::vector<uint8_t> out_;
};

void put_value(ByteSink& sink, const Value& value) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          sink.put_string(v);
        } else if constexpr (std::is_same_v<T, Array>) {
          sink.put<uint32_t>(static_cast<uint32_t>(v.element_type));
          sink.put<uint64_t>(v.items.size());
          for (const Value& item : v.items) put_value(sink, item);
        } else if constexpr (std::is_same_v<T, bool>) {
          sink.put<uint8_t>(v ? 1 : 0);
        } else {
          sink.put<T>(v);
        }
      },
      value.data);
}

// Every item of every (nested) array must have the array's element type.
void check_array_types(const std::string& key, const Value& value) {
  const auto* array = std::get_if<Array>(&value.data);
  if (array == nullptr) return;
  if (static_cast<uint32_t>(array->element_type) > static_cast<uint32_t>(ValueType::kFloat64)) {
    throw GgufError(Kind::kMalformed, "GGUF writer: key " + key + ": invalid array element type");
  }
  for (const Value& item : array->items) {
    if (item.type() != array->element_type) {
      throw GgufError(Kind::kMalformed, "GGUF writer: key " + key + ": array of " +
                                            std::string(value_type_name(array->element_type)) +
                                            " holds a " +
                                            std::string(value_type_name(item.type())));
    }
    check_array_types(key, item);
  }
}

uint64_t expected_tensor_bytes(const std::string& name, GgmlType type,
                               const std::vector<int64_t>& shape) {
  const std::string prefix = "GGUF writer: tensor " + name + ": ";
  if (!is_supported(type)) {
    throw GgufError(Kind::kUnsupportedTensorType,
                    prefix + "type " + std::string(type_name(type)) +
                        " is not supported; supported: " + supported_types_list());
  }
  if (shape.empty() || shape.size() > kMaxDims) {
    throw GgufError(Kind::kMalformed,
                    prefix + "expected 1 to 4 dimensions, got " + std::to_string(shape.size()));
  }
  uint64_t rows = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 1) {
      throw GgufError(Kind::kMalformed, prefix + "dimension " + std::to_string(i) + " is " +
                                            std::to_string(shape[i]) + "; expected >= 1");
    }
    if (i > 0) rows *= static_cast<uint64_t>(shape[i]);
    if (rows > (uint64_t{1} << 48)) {
      throw GgufError(Kind::kMalformed, prefix + "shape is too large");
    }
  }
  const uint64_t per_row = row_bytes(type, shape[0]);
  if (per_row > (uint64_t{1} << 48) / rows) {
    throw GgufError(Kind::kMalformed, prefix + "shape is too large");
  }
  return per_row * rows;
}

}  // namespace

GgufWriter::GgufWriter(uint32_t version) : version_(version) {
  if (version != 2 && version != 3) {
    throw GgufError(Kind::kUnsupportedVersion, "GGUF writer: version " + std::to_string(version) +
                                                   " is not supported; supported: 2, 3");
  }
}

void GgufWriter::set(std::string key, Value value) {
  check_array_types(key, value);
  if (key == kAlignmentKey) {
    const auto* alignment = std::get_if<uint32_t>(&value.data);
    if (alignment == nullptr || !std::has_single_bit(*alignment)) {
      throw GgufError(Kind::kMalformed,
                      "GGUF writer: general.alignment must be a uint32 power of two");
    }
    alignment_ = *alignment;
  }
  for (auto& [existing_key, existing_value] : metadata_) {
    if (existing_key == key) {
      existing_value = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(std::move(key), std::move(value));
}

void GgufWriter::add_tensor(std::string name, GgmlType type, std::vector<int64_t> shape,
                            std::vector<uint8_t> bytes) {
  for (const PendingTensor& tensor : tensors_) {
    if (tensor.name == name) {
      throw GgufError(Kind::kMalformed, "GGUF writer: duplicate tensor name " + name);
    }
  }
  const uint64_t expected = expected_tensor_bytes(name, type, shape);
  if (bytes.size() != expected) {
    throw GgufError(Kind::kMalformed, "GGUF writer: tensor " + name + ": got " +
                                          std::to_string(bytes.size()) + " bytes, expected " +
                                          std::to_string(expected));
  }
  tensors_.push_back({std::move(name), type, std::move(shape), std::move(bytes)});
}

void GgufWriter::add_tensor_f32(std::string name, GgmlType type, std::vector<int64_t> shape,
                                std::span<const float> values) {
  const uint64_t n_bytes = expected_tensor_bytes(name, type, shape);
  const int64_t n_elements =
      std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  if (values.size() != static_cast<uint64_t>(n_elements)) {
    throw GgufError(Kind::kMalformed, "GGUF writer: tensor " + name + ": got " +
                                          std::to_string(values.size()) + " values, expected " +
                                          std::to_string(n_elements));
  }
  std::vector<uint8_t> bytes(n_bytes);
  quantize_row(type, values.data(), bytes.data(), n_elements);
  add_tensor(std::move(name), type, std::move(shape), std::move(bytes));
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  ByteSink sink;
  sink.put_bytes(std::vector<uint8_t>(kGgufMagic.begin(), kGgufMagic.end()));
  sink.put<uint32_t>(version_);
  sink.put<uint64_t>(tensors_.size());
  sink.put<uint64_t>(metadata_.size());
  for (const auto& [key, value] : metadata_) {
    sink.put_string(key);
    sink.put<uint32_t>(static_cast<uint32_t>(value.type()));
    put_value(sink, value);
  }
  uint64_t offset = 0;
  for (const PendingTensor& tensor : tensors_) {
    sink.put_string(tensor.name);
    sink.put<uint32_t>(static_cast<uint32_t>(tensor.shape.size()));
    for (int64_t dim : tensor.shape) sink.put<uint64_t>(static_cast<uint64_t>(dim));
    sink.put<uint32_t>(static_cast<uint32_t>(tensor.type));
    sink.put<uint64_t>(offset);
    offset = (offset + tensor.bytes.size() + alignment_ - 1) / alignment_ * alignment_;
  }
  // Data section: each tensor starts aligned and is padded to the alignment, as GGML does.
  sink.pad_to(alignment_);
  for (const PendingTensor& tensor : tensors_) {
    sink.put_bytes(tensor.bytes);
    sink.pad_to(alignment_);
  }
  return sink.take();
}

void GgufWriter::write(const std::filesystem::path& path) const {
  const std::vector<uint8_t> bytes = to_bytes();
  const std::string name = path.string();
  std::FILE* file = std::fopen(name.c_str(), "wb");
  if (file == nullptr) {
    throw GgufError(Kind::kIo, name + ": cannot open for writing: " + std::strerror(errno));
  }
  const size_t written = std::fwrite(bytes.data(), 1, bytes.size(), file);
  const int write_errno = errno;
  const bool closed = std::fclose(file) == 0;
  if (written != bytes.size() || !closed) {
    throw GgufError(Kind::kIo, name + ": cannot write: " +
                                   std::strerror(written != bytes.size() ? write_errno : errno));
  }
}

}  // namespace servescope::gguf
