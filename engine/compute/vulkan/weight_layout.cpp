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
bool is_block_type(gguf::GgmlType type) { return gguf::block_elements(type) > 1; }

// Where a GGML block keeps its parts: the fp16 scale d at 0, then (Q4_1, Q5_1) the fp16
// minimum m, then (Q5_0, Q5_1) the 4 bytes of fifth bits, then the quants.
struct BlockParts {
  int64_t scale_bytes;  // d, or d and m
  int64_t high_bytes;   // 0 or 4
};

BlockParts block_parts(gguf::GgmlType type) {
  switch (type) {
    case gguf::GgmlType::Q4_1:
      return {4, 0};
    case gguf::GgmlType::Q5_0:
      return {2, 4};
    case gguf::GgmlType::Q5_1:
      return {4, 4};
    default:
      return {2, 0};  // Q8_0, Q4_0
  }
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
  // Quants of all blocks, then their fifth bits (Q5_*), then their scales (weights.glsl).
  const int64_t blocks = rows * (cols / gguf::kQuantBlock);
  const int64_t quant_bytes = quant_bytes_per_block(type);
  const int64_t block_bytes = gguf::block_bytes(type);
  const BlockParts parts = block_parts(type);
  uint8_t* high = out.data() + blocks * quant_bytes;
  uint8_t* scales = high + blocks * parts.high_bytes;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block = ggml_bytes.data() + b * block_bytes;
    const auto scale_bytes = static_cast<size_t>(parts.scale_bytes);
    const auto high_bytes = static_cast<size_t>(parts.high_bytes);
    std::memcpy(scales + b * parts.scale_bytes, block, scale_bytes);
    std::memcpy(high + b * parts.high_bytes, block + scale_bytes, high_bytes);
    std::memcpy(out.data() + b * quant_bytes, block + scale_bytes + high_bytes,
                static_cast<size_t>(quant_bytes));
  }
  return out;
}

}  // namespace servescope::compute::vulkan
