// The device layout of weight matrices (see shaders/include/weights.glsl): GGML's bytes
// rearranged at upload so that shaders load them in aligned 16-byte units.
//   F32, F16, BF16   rows padded with zeros to a multiple of 4 elements.
//   block types      all blocks' quants (32 / 16 bytes each, row-major block order), then
//                    (Q5_0, Q5_1) all blocks' 4 bytes of fifth bits, then all blocks' fp16
//                    scales (Q4_1, Q5_1: fp16 scale and minimum).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/gguf/ggml_types.h"

namespace servescope::compute::vulkan {

// Bytes one row occupies in the device layout.
uint64_t device_row_bytes(gguf::GgmlType type, int64_t cols);

// `rows` rows of GGML bytes -> the device layout, rounded up to whole 32-bit words.
std::vector<uint8_t> to_device_layout(gguf::GgmlType type, int64_t rows, int64_t cols,
                                      std::span<const uint8_t> ggml_bytes);

}  // namespace servescope::compute::vulkan
