#include "engine/compute/vulkan/weight_layout.h"

#include <cstring>

namespace servescope::compute::vulkan {
namespace {

int64_t padded_cols(int64_t cols) { return (cols + 3) / 4 * 4; }

// Element size of the plain types, quant bytes per block of the block types.
int64_t element_bytes(gguf::GgmlType type) { return type == gguf::GgmlType::F32 ? 4 : 2; }
int64_t quant_bytes_per_block(gguf::GgmlType type) {
  return type == gguf::GgmlType::Q8_0 ? 32 : 16;
}
bool is_block_type(gguf::GgmlType type) {
  return type == gguf::GgmlType::Q8_0 || type == gguf::GgmlType::Q4_0;
}

}  // namespace

uint64_t device_row_bytes(gguf::GgmlType type, int64_t cols) {
  if (is_block_type(type)) return gguf::row_bytes(type, cols);  // same bytes, split apart
  return static_cast<uint64_t>(padded_cols(cols) * element_bytes(type));
}

std::vector<uint8_t> to_device_layout(gguf::GgmlType type, int64_t rows, int64_t cols,
                                      std::span<const uint8_t> ggml_bytes) {
  const uint64_t total = device_row_bytes(type, cols) * static_cast<uint64_t>(rows);
  std::vector<uint8_t> out((total + 3) / 4 * 4, 0);
  if (!is_block_type(type)) {
    const auto ggml_row = static_cast<size_t>(cols * element_bytes(type));
    const auto device_row = static_cast<size_t>(device_row_bytes(type, cols));
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(out.data() + r * device_row, ggml_bytes.data() + r * ggml_row, ggml_row);
    }
    return out;
  }
  const int64_t blocks = rows * (cols / gguf::kQuantBlock);
  const int64_t quant_bytes = quant_bytes_per_block(type);
  const int64_t block_bytes = gguf::block_bytes(type);  // fp16 scale, then the quants
  uint8_t* scales = out.data() + blocks * quant_bytes;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block = ggml_bytes.data() + b * block_bytes;
    std::memcpy(scales + 2 * b, block, 2);
    std::memcpy(out.data() + b * quant_bytes, block + 2, static_cast<size_t>(quant_bytes));
  }
  return out;
}

}  // namespace servescope::compute::vulkan
