#include "engine/compute/vulkan/weight_layout.h"

#include <cstring>
#include <optional>

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

// --- K-quants: super-blocks of 256 elements, eight 32-element slices -----------------------

using gguf::kSuperBlock;
constexpr int kSlice = 32;

// Where a GGML super-block keeps what is copied as it is (weight_layout.h).
struct SuperBlockParts {
  int low_bits;   // bits of each quant in the low plane: 4 or 2
  int high_bits;  // bits in the high plane: 0, 1 or 2
  int scales_at;  // the packed sub-block scales (and mins)
  int scales_bytes;
  int d_at;  // fp16 d, then (Q2_K, Q4_K, Q5_K) fp16 dmin
  int d_bytes;
};

std::optional<SuperBlockParts> super_block_parts(gguf::GgmlType type) {
  switch (type) {
    case gguf::GgmlType::Q2_K:
      return SuperBlockParts{2, 0, 0, 16, 80, 4};
    case gguf::GgmlType::Q3_K:
      return SuperBlockParts{2, 1, 96, 12, 108, 2};
    case gguf::GgmlType::Q4_K:
      return SuperBlockParts{4, 0, 4, 12, 0, 4};
    case gguf::GgmlType::Q5_K:
      return SuperBlockParts{4, 1, 4, 12, 0, 4};
    case gguf::GgmlType::Q6_K:
      return SuperBlockParts{4, 2, 192, 16, 208, 2};
    default:
      return std::nullopt;
  }
}

// The quant of each of a super-block's 256 elements, in element order, split into its low
// and high bits as GGML stores them (ggml-common.h's block_q*_K).
void split_quants(gguf::GgmlType type, const uint8_t* block, uint8_t* low, uint8_t* high) {
  for (int e = 0; e < kSuperBlock; ++e) {
    const int half = e / 128;          // Q2_K, Q3_K, Q6_K: two halves of 128
    const int quarter = e % 128 / 32;  // ... of four groups of 32 sharing their bytes
    const int l = e % 32;
    switch (type) {
      case gguf::GgmlType::Q2_K:  // qs at 16: 2 bits, group q at bit 2q of byte 32 * half + l
        low[e] = static_cast<uint8_t>((block[16 + 32 * half + l] >> (2 * quarter)) & 3);
        high[e] = 0;
        break;
      case gguf::GgmlType::Q3_K:  // hmask at 0 (bit 4 * half + q of byte l), qs at 32
        low[e] = static_cast<uint8_t>((block[32 + 32 * half + l] >> (2 * quarter)) & 3);
        high[e] = static_cast<uint8_t>((block[l] >> (4 * half + quarter)) & 1);
        break;
      case gguf::GgmlType::Q4_K:    // qs at 16: element 64j + l low nibble, 64j + 32 + l high
      case gguf::GgmlType::Q5_K: {  // qh at 16 (bit e / 32 of byte l), qs at 48
        const int qs = type == gguf::GgmlType::Q4_K ? 16 : 48;
        const uint8_t byte = block[qs + 32 * (e / 64) + l];
        low[e] = static_cast<uint8_t>(e % 64 < 32 ? byte & 0xf : byte >> 4);
        high[e] = static_cast<uint8_t>(
            type == gguf::GgmlType::Q5_K ? (block[16 + l] >> (e / 32)) & 1 : 0);
        break;
      }
      case gguf::GgmlType::Q6_K: {  // ql at 0, qh at 128 (bits 2q of byte 32 * half + l)
        const uint8_t byte = block[64 * half + 32 * (quarter % 2) + l];
        low[e] = static_cast<uint8_t>(quarter < 2 ? byte & 0xf : byte >> 4);
        high[e] = static_cast<uint8_t>((block[128 + 32 * half + l] >> (2 * quarter)) & 3);
        break;
      }
      default:
        break;
    }
  }
}

// Packs the `bits`-bit values of one 32-element slice into `bits` words: element 4c + i goes to
// byte i of word c % bits, at bit bits * (c / bits) of that byte, so a shift and a mask give
// four elements, one per byte.
void pack_slice(const uint8_t* values, int bits, uint8_t* out) {
  uint32_t words[4] = {0, 0, 0, 0};
  for (int e = 0; e < kSlice; ++e) {
    const int c = e / 4;
    const int i = e % 4;
    words[c % bits] |= uint32_t{values[e]} << (8 * i + bits * (c / bits));
  }
  std::memcpy(out, words, static_cast<size_t>(bits) * 4);
}

void to_super_block_layout(gguf::GgmlType type, const SuperBlockParts& parts, int64_t blocks,
                           std::span<const uint8_t> ggml_bytes, uint8_t* out) {
  const int64_t slices = blocks * (kSuperBlock / kSlice);
  uint8_t* high_plane = out + slices * parts.low_bits * 4;
  uint8_t* scales = high_plane + slices * parts.high_bits * 4;
  uint8_t* ds = scales + blocks * parts.scales_bytes;
  const int64_t block_bytes = gguf::block_bytes(type);
  uint8_t low[kSuperBlock];
  uint8_t high[kSuperBlock];
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block = ggml_bytes.data() + b * block_bytes;
    split_quants(type, block, low, high);
    for (int s = 0; s < kSuperBlock / kSlice; ++s) {
      const int64_t slice = b * (kSuperBlock / kSlice) + s;
      pack_slice(low + s * kSlice, parts.low_bits, out + slice * parts.low_bits * 4);
      if (parts.high_bits > 0) {
        pack_slice(high + s * kSlice, parts.high_bits, high_plane + slice * parts.high_bits * 4);
      }
    }
    std::memcpy(scales + b * parts.scales_bytes, block + parts.scales_at,
                static_cast<size_t>(parts.scales_bytes));
    std::memcpy(ds + b * parts.d_bytes, block + parts.d_at, static_cast<size_t>(parts.d_bytes));
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
  if (const auto parts = super_block_parts(type)) {
    to_super_block_layout(type, *parts, rows * (cols / kSuperBlock), ggml_bytes, out.data());
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
