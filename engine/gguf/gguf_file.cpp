#include "engine/gguf/gguf_file.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <numeric>
#include <span>

#include "engine/core/error.h"
#include "engine/core/regular_file.h"
#include "engine/gguf/byte_cursor.h"
#include "engine/gguf/gguf_format.h"

namespace servescope::gguf {

using Kind = GgufError::Kind;

// ---------------------------------------------------------------------------------------------
// Storage: the bytes of the file, either memory-mapped or owned.

class GgufFile::Storage {
 public:
  explicit Storage(std::vector<uint8_t> owned) : owned_(std::move(owned)), bytes_(owned_) {}
  Storage(void* mapping, size_t size)
      : mapping_(mapping), bytes_(static_cast<const uint8_t*>(mapping), size) {}
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() {
    if (mapping_ != nullptr) munmap(mapping_, bytes_.size());
  }

  std::span<const uint8_t> bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> owned_;
  void* mapping_ = nullptr;
  std::span<const uint8_t> bytes_;
};

namespace {

[[noreturn]] void throw_io(const std::string& name, const std::string& what, int error_number) {
  throw GgufError(Kind::kIo, name + ": " + what + ": " + std::strerror(error_number));
}

// Closes a file descriptor on every path out of map_file.
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

// A regular file only: open_regular_file refuses a FIFO (whose open() would block forever), a
// device or a folder before reading anything.
int open_model_file(const std::string& name) {
  try {
    return open_regular_file(name);
  } catch (const FileError& e) {
    throw GgufError(Kind::kIo, e.what());
  }
}

std::unique_ptr<GgufFile::Storage> map_file(const std::string& name) {
  const int fd = open_model_file(name);
  const FdCloser closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0) throw_io(name, "cannot stat", errno);
  const auto size = static_cast<size_t>(info.st_size);
  // mmap rejects a length of 0; an empty file is reported by the parser as truncated.
  if (size == 0) return std::make_unique<GgufFile::Storage>(std::vector<uint8_t>{});
  void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (mapping == MAP_FAILED) throw_io(name, "cannot memory-map", errno);
  return std::make_unique<GgufFile::Storage>(mapping, size);
}

// ---------------------------------------------------------------------------------------------
// Header

void read_magic(ByteCursor& cursor, const std::string& file_name) {
  const auto magic = cursor.read<std::array<char, 4>>("the magic");
  if (std::memcmp(magic.data(), kGgufMagic.data(), kGgufMagic.size()) != 0) {
    throw GgufError(Kind::kBadMagic,
                    file_name + ": not a GGUF file (expected the magic 'GGUF' at byte 0)");
  }
}

uint32_t read_version(ByteCursor& cursor, const std::string& file_name) {
  const auto version = cursor.read<uint32_t>("the version");
  if (version == 2 || version == 3) return version;
  std::string message = file_name + ": GGUF version " + std::to_string(version) +
                        " is not supported; supported: 2, 3";
  const uint32_t swapped =
      (version >> 24) | ((version >> 8) & 0xFF00u) | ((version << 8) & 0xFF0000u) | (version << 24);
  if (swapped == 2 || swapped == 3) message += " (this looks like a big-endian GGUF file)";
  throw GgufError(Kind::kUnsupportedVersion, message);
}

// ---------------------------------------------------------------------------------------------
// Metadata values

ValueType read_value_type(ByteCursor& cursor, std::string_view field) {
  const auto id = cursor.read<uint32_t>(field);
  if (id > static_cast<uint32_t>(ValueType::kFloat64)) {
    cursor.fail(Kind::kMalformed, std::string(field) + " is " + std::to_string(id) +
                                      "; expected a GGUF value type id 0..12");
  }
  return static_cast<ValueType>(id);
}

// Fewest bytes a value of this type occupies, so that element counts can be checked against
// the bytes left before memory is reserved.
uint64_t min_encoded_bytes(ValueType type) {
  switch (type) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kBool:
      return 1;
    case ValueType::kUint16:
    case ValueType::kInt16:
      return 2;
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kFloat32:
      return 4;
    case ValueType::kString:  // the uint64 length
    case ValueType::kUint64:
    case ValueType::kInt64:
    case ValueType::kFloat64:
      return 8;
    case ValueType::kArray:
      return 12;  // element type + count
  }
  return 1;
}

Value read_value(ByteCursor& cursor, ValueType type, int depth);

Value read_array(ByteCursor& cursor, int depth) {
  if (depth >= kMaxArrayDepth) {
    cursor.fail(Kind::kMalformed,
                "arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " levels");
  }
  const ValueType element_type = read_value_type(cursor, "the array element type");
  const uint64_t count = cursor.read_count("the array length", min_encoded_bytes(element_type));
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) items.push_back(read_value(cursor, element_type, depth + 1));
  return Value::array(element_type, std::move(items));
}

Value read_value(ByteCursor& cursor, ValueType type, int depth) {
  switch (type) {
    case ValueType::kUint8:
      return Value::u8(cursor.read<uint8_t>("a uint8 value"));
    case ValueType::kInt8:
      return Value::i8(cursor.read<int8_t>("an int8 value"));
    case ValueType::kUint16:
      return Value::u16(cursor.read<uint16_t>("a uint16 value"));
    case ValueType::kInt16:
      return Value::i16(cursor.read<int16_t>("an int16 value"));
    case ValueType::kUint32:
      return Value::u32(cursor.read<uint32_t>("a uint32 value"));
    case ValueType::kInt32:
      return Value::i32(cursor.read<int32_t>("an int32 value"));
    case ValueType::kFloat32:
      return Value::f32(cursor.read<float>("a float32 value"));
    case ValueType::kUint64:
      return Value::u64(cursor.read<uint64_t>("a uint64 value"));
    case ValueType::kInt64:
      return Value::i64(cursor.read<int64_t>("an int64 value"));
    case ValueType::kFloat64:
      return Value::f64(cursor.read<double>("a float64 value"));
    case ValueType::kString:
      return Value::str(cursor.read_string("a string value"));
    case ValueType::kArray:
      return read_array(cursor, depth);
    case ValueType::kBool: {
      const auto byte = cursor.read<uint8_t>("a bool value");
      if (byte > 1) {
        cursor.fail(Kind::kMalformed,
                    "bool value is " + std::to_string(byte) + "; expected 0 or 1");
      }
      return Value::boolean(byte == 1);
    }
  }
  cursor.fail(Kind::kMalformed, "unknown value type");
}

// general.alignment: a uint32, non-zero power of two.
uint64_t alignment_from(const Value* value, ByteCursor& cursor) {
  if (value == nullptr) return kDefaultAlignment;
  cursor.set_item("metadata key '" + std::string(kAlignmentKey) + "'");
  const auto* alignment = std::get_if<uint32_t>(&value->data);
  if (alignment == nullptr) {
    cursor.fail(Kind::kMalformed,
                "has type " + std::string(value_type_name(value->type())) + "; expected uint32");
  }
  if (!std::has_single_bit(*alignment)) {
    cursor.fail(Kind::kMalformed,
                "is " + std::to_string(*alignment) + "; expected a non-zero power of two");
  }
  return *alignment;
}

// ---------------------------------------------------------------------------------------------
// Tensor infos

// Bytes of a tensor info with an empty name, one dimension: the least any tensor info needs.
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;
// Bytes of a metadata entry with an empty key and a one-byte value.
constexpr uint64_t kMinMetadataEntryBytes = 8 + 4 + 1;

std::vector<int64_t> read_shape(ByteCursor& cursor) {
  const auto n_dims = cursor.read<uint32_t>("the number of dimensions");
  if (n_dims == 0 || n_dims > kMaxDims) {
    cursor.fail(Kind::kMalformed, "has " + std::to_string(n_dims) + " dimensions; expected 1 to " +
                                      std::to_string(kMaxDims));
  }
  std::vector<int64_t> shape;
  int64_t elements = 1;
  for (uint32_t i = 0; i < n_dims; ++i) {
    const auto dim = cursor.read<uint64_t>("a dimension");
    if (dim == 0 || dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      cursor.fail(Kind::kMalformed, "dimension " + std::to_string(i) + " is " +
                                        std::to_string(dim) + "; expected 1 to 2^63-1");
    }
    const auto extent = static_cast<int64_t>(dim);
    if (elements > std::numeric_limits<int64_t>::max() / extent) {
      cursor.fail(Kind::kMalformed, "the element count overflows 64 bits");
    }
    elements *= extent;
    shape.push_back(extent);
  }
  return shape;
}

GgmlType read_tensor_type(ByteCursor& cursor, const std::string& tensor_name,
                          const std::string& file_name) {
  const auto id = cursor.read<uint32_t>("the tensor type");
  const auto type = static_cast<GgmlType>(id);
  if (is_supported(type)) return type;
  const std::string described = type_name(type) == "unknown"
                                    ? "unknown type id " + std::to_string(id)
                                    : "type " + std::string(type_name(type));
  throw GgufError(Kind::kUnsupportedTensorType,
                  file_name + ": tensor " + tensor_name + " has " + described +
                      ", which ServeScope does not load; supported: " + supported_types_list());
}

// Bytes of the whole tensor; checks the row length against the block size.
uint64_t tensor_bytes(ByteCursor& cursor, GgmlType type, const std::vector<int64_t>& shape) {
  if (shape[0] % block_elements(type) != 0) {
    cursor.fail(Kind::kMalformed, "row length " + std::to_string(shape[0]) +
                                      " is not a multiple of the " + std::string(type_name(type)) +
                                      " block size " + std::to_string(block_elements(type)));
  }
  const uint64_t per_row = row_bytes(type, shape[0]);
  uint64_t rows = 1;
  for (size_t i = 1; i < shape.size(); ++i) rows *= static_cast<uint64_t>(shape[i]);
  if (per_row != 0 && rows > std::numeric_limits<uint64_t>::max() / per_row) {
    cursor.fail(Kind::kMalformed, "the byte size overflows 64 bits");
  }
  return per_row * rows;
}

TensorInfo read_tensor_info(ByteCursor& cursor, uint64_t index, const std::string& file_name) {
  cursor.set_item("tensor info #" + std::to_string(index));
  TensorInfo info;
  info.name = cursor.read_string("the tensor name");
  cursor.set_item("tensor " + info.name);
  info.shape = read_shape(cursor);
  info.type = read_tensor_type(cursor, info.name, file_name);
  info.n_bytes = tensor_bytes(cursor, info.type, info.shape);
  info.offset = cursor.read<uint64_t>("the data offset");
  return info;
}

uint64_t align_up(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// Checks every tensor's offset and extent and points its data into the file.
void place_tensors(std::vector<TensorInfo>& tensors, std::span<const uint8_t> file,
                   uint64_t data_start, uint64_t alignment, const std::string& file_name) {
  for (TensorInfo& tensor : tensors) {
    const std::string prefix = file_name + ": tensor " + tensor.name + ": ";
    if (tensor.offset % alignment != 0) {
      throw GgufError(Kind::kMalformed, prefix + "data offset " + std::to_string(tensor.offset) +
                                            " is not a multiple of the alignment " +
                                            std::to_string(alignment));
    }
    const uint64_t available = data_start <= file.size() ? file.size() - data_start : 0;
    if (tensor.offset > available || tensor.n_bytes > available - tensor.offset) {
      throw GgufError(Kind::kTensorOutOfBounds,
                      prefix + "needs " + std::to_string(tensor.n_bytes) +
                          " bytes at data offset " + std::to_string(tensor.offset) +
                          " (the data section starts at byte " + std::to_string(data_start) +
                          "), but the file has only " + std::to_string(file.size()) + " bytes");
    }
    tensor.data = file.data() + data_start + tensor.offset;
  }
}

// Two tensors sharing bytes is a writer bug that would silently alias weights.
void check_no_overlap(const std::vector<TensorInfo>& tensors, const std::string& file_name) {
  std::vector<const TensorInfo*> by_offset;
  for (const TensorInfo& tensor : tensors) {
    if (tensor.n_bytes > 0) by_offset.push_back(&tensor);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo& before = *by_offset[i - 1];
    const TensorInfo& after = *by_offset[i];
    if (before.offset + before.n_bytes > after.offset) {
      throw GgufError(Kind::kMalformed, file_name + ": tensor " + after.name +
                                            " overlaps the data of tensor " + before.name);
    }
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// TensorInfo

int64_t TensorInfo::n_elements() const {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

int64_t TensorInfo::rows() const {
  if (shape.empty()) return 0;
  return std::accumulate(shape.begin() + 1, shape.end(), int64_t{1}, std::multiplies<>());
}

// ---------------------------------------------------------------------------------------------
// GgufFile

GgufFile GgufFile::open(const std::filesystem::path& path) {
  std::string name = path.string();
  auto storage = map_file(name);
  return GgufFile(std::move(storage), std::move(name));
}

GgufFile GgufFile::from_bytes(std::vector<uint8_t> bytes, std::string name) {
  return GgufFile(std::make_unique<Storage>(std::move(bytes)), std::move(name));
}

GgufFile::GgufFile(std::unique_ptr<Storage> storage, std::string name)
    : storage_(std::move(storage)), name_(std::move(name)) {
  parse();
}

GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

uint64_t GgufFile::file_size() const { return storage_ ? storage_->bytes().size() : 0; }

const Value* GgufFile::find(std::string_view key) const {
  const auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

void GgufFile::parse() {
  const std::span<const uint8_t> file = storage_->bytes();
  if (file.empty()) {
    throw GgufError(Kind::kTruncated, name_ + ": the file is empty; expected a GGUF header");
  }
  ByteCursor cursor(file, name_);
  read_magic(cursor, name_);
  version_ = read_version(cursor, name_);
  const uint64_t n_tensors = cursor.read<uint64_t>("the tensor count");
  const uint64_t n_metadata = cursor.read<uint64_t>("the metadata count");
  if (n_tensors > cursor.remaining() / kMinTensorInfoBytes ||
      n_metadata > cursor.remaining() / kMinMetadataEntryBytes) {
    cursor.fail(Kind::kMalformed,
                "declares " + std::to_string(n_tensors) + " tensors and " +
                    std::to_string(n_metadata) + " metadata entries, but only " +
                    std::to_string(cursor.remaining()) +
                    " bytes follow; the counts are wrong or the file is truncated");
  }

  metadata_.reserve(static_cast<size_t>(n_metadata));
  for (uint64_t i = 0; i < n_metadata; ++i) {
    cursor.set_item("metadata entry #" + std::to_string(i));
    std::string key = cursor.read_string("the key");
    cursor.set_item("metadata key '" + key + "'");
    if (metadata_index_.count(key) != 0) cursor.fail(Kind::kMalformed, "duplicate key");
    const ValueType type = read_value_type(cursor, "the value type");
    Value value = read_value(cursor, type, 0);
    metadata_index_.emplace(key, metadata_.size());
    metadata_.emplace_back(std::move(key), std::move(value));
  }
  alignment_ = alignment_from(find(kAlignmentKey), cursor);

  tensors_.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo info = read_tensor_info(cursor, i, name_);
    if (tensor_index_.count(info.name) != 0) {
      cursor.fail(Kind::kMalformed, "duplicate tensor name");
    }
    tensor_index_.emplace(info.name, tensors_.size());
    tensors_.push_back(std::move(info));
  }

  const uint64_t data_start = align_up(cursor.position(), alignment_);
  place_tensors(tensors_, file, data_start, alignment_, name_);
  check_no_overlap(tensors_, name_);
}

}  // namespace servescope::gguf
