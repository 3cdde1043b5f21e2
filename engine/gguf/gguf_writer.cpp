#include "engine/gguf/gguf_writer.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <utility>

#include "engine/core/error.h"
#include "engine/gguf/gguf_format.h"

namespace servescope::gguf {
namespace {

using Kind = GgufError::Kind;

}  // namespace

// Appends little-endian encodings to wherever the file goes, counting the bytes.
class GgufWriter::Sink {
 public:
  virtual ~Sink() = default;
  template <class T>
  void put(T value) {
    append(reinterpret_cast<const uint8_t*>(&value), sizeof(T));
  }
  void put_string(const std::string& text) {
    put<uint64_t>(text.size());
    append(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  }
  void put_bytes(std::span<const uint8_t> bytes) { append(bytes.data(), bytes.size()); }
  void pad_to(uint64_t alignment) {
    static constexpr uint8_t kZeros[256] = {};
    uint64_t pad = (alignment - size_ % alignment) % alignment;
    while (pad > 0) {
      const uint64_t n = std::min<uint64_t>(pad, sizeof kZeros);
      append(kZeros, n);
      pad -= n;
    }
  }
  uint64_t size() const { return size_; }

  void append(const uint8_t* data, size_t n) {
    write(data, n);
    size_ += n;
  }

 private:
  virtual void write(const uint8_t* data, size_t n) = 0;
  uint64_t size_ = 0;
};

namespace {

using Sink = GgufWriter::Sink;

// Collects the file in memory (to_bytes).
class VectorSink final : public Sink {
 public:
  std::vector<uint8_t> take() { return std::move(out_); }

 private:
  void write(const uint8_t* data, size_t n) override {
    const size_t old_size = out_.size();
    out_.resize(old_size + n);
    if (n > 0) std::memcpy(out_.data() + old_size, data, n);
  }
  std::vector<uint8_t> out_;
};

// Writes the file as it is produced (write): never more than a chunk in memory.
class FileSink final : public Sink {
 public:
  explicit FileSink(std::string name) : name_(std::move(name)) {
    file_ = std::fopen(name_.c_str(), "wb");
    if (file_ == nullptr) {
      throw GgufError(Kind::kIo, name_ + ": cannot open for writing: " + std::strerror(errno));
    }
    std::setvbuf(file_, nullptr, _IOFBF, size_t{1} << 20);  // few, large writes
  }
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;
  ~FileSink() override {
    if (file_ != nullptr) std::fclose(file_);
  }
  void close() {
    std::FILE* file = std::exchange(file_, nullptr);
    if (std::fclose(file) != 0) {
      throw GgufError(Kind::kIo, name_ + ": cannot write: " + std::strerror(errno));
    }
  }

 private:
  void write(const uint8_t* data, size_t n) override {
    if (std::fwrite(data, 1, n, file_) != n) {
      throw GgufError(Kind::kIo, name_ + ": cannot write: " + std::strerror(errno));
    }
  }
  std::string name_;
  std::FILE* file_ = nullptr;
};

void put_value(Sink& sink, const Value& value) {
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

void GgufWriter::check_new_name(const std::string& name) const {
  for (const PendingTensor& tensor : tensors_) {
    if (tensor.name == name) {
      throw GgufError(Kind::kMalformed, "GGUF writer: duplicate tensor name " + name);
    }
  }
}

void GgufWriter::add_tensor(std::string name, GgmlType type, std::vector<int64_t> shape,
                            std::vector<uint8_t> bytes) {
  check_new_name(name);
  const uint64_t expected = expected_tensor_bytes(name, type, shape);
  if (bytes.size() != expected) {
    throw GgufError(Kind::kMalformed, "GGUF writer: tensor " + name + ": got " +
                                          std::to_string(bytes.size()) + " bytes, expected " +
                                          std::to_string(expected));
  }
  tensors_.push_back({std::move(name), type, std::move(shape), expected, std::move(bytes), {}});
}

void GgufWriter::add_tensor_streamed(std::string name, GgmlType type, std::vector<int64_t> shape,
                                     TensorProducer produce) {
  check_new_name(name);
  const uint64_t expected = expected_tensor_bytes(name, type, shape);
  tensors_.push_back({std::move(name), type, std::move(shape), expected, {}, std::move(produce)});
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

void GgufWriter::serialize(Sink& sink) const {
  sink.append(reinterpret_cast<const uint8_t*>(kGgufMagic.data()), kGgufMagic.size());
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
    offset = (offset + tensor.n_bytes + alignment_ - 1) / alignment_ * alignment_;
  }
  // Data section: each tensor starts aligned and is padded to the alignment, as GGML does.
  sink.pad_to(alignment_);
  for (const PendingTensor& tensor : tensors_) {
    if (tensor.produce) {
      const uint64_t start = sink.size();
      tensor.produce([&](std::span<const uint8_t> chunk) { sink.put_bytes(chunk); });
      if (sink.size() - start != tensor.n_bytes) {
        throw GgufError(Kind::kMalformed, "GGUF writer: tensor " + tensor.name + ": produced " +
                                              std::to_string(sink.size() - start) +
                                              " bytes, expected " + std::to_string(tensor.n_bytes));
      }
    } else {
      sink.put_bytes(tensor.bytes);
    }
    sink.pad_to(alignment_);
  }
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  VectorSink sink;
  serialize(sink);
  return sink.take();
}

void GgufWriter::write(const std::filesystem::path& path) const {
  FileSink sink(path.string());
  serialize(sink);
  sink.close();
}

}  // namespace servescope::gguf
