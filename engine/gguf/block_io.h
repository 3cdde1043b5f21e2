// Reading and writing GGML block structs at unaligned byte offsets (tensor data in a mapped
// file has no alignment guarantee for a block's fp16 fields).
#pragma once

#include <cstdint>
#include <cstring>

namespace servescope::gguf {

// Block `index` of an array of Blocks starting at `src`.
template <class Block>
Block load_block(const uint8_t* src, int64_t index) {
  Block block;
  std::memcpy(&block, src + index * static_cast<int64_t>(sizeof block), sizeof block);
  return block;
}

template <class Block>
void store_block(const Block& block, uint8_t* dst, int64_t index) {
  std::memcpy(dst + index * static_cast<int64_t>(sizeof block), &block, sizeof block);
}

}  // namespace servescope::gguf
