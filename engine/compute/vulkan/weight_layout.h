// The device layout of weight matrices (see shaders/include/weights.glsl): GGML's bytes
// rearranged at upload so that shaders load them in aligned 16-byte units.
//   F32, F16, BF16   rows padded with zeros to a multiple of 4 elements.
//   block types      all blocks' quants (32 / 16 bytes each, row-major block order), then
//                    (Q5_0, Q5_1) all blocks' 4 bytes of fifth bits, then all blocks' fp16
//                    scales (Q4_1, Q5_1: fp16 scale and minimum).
//   K-quants         256-element super-blocks cut into 32-element slices. Planes of quant bits
//                    for all slices: the low bits (4 for Q4_K/Q5_K/Q6_K, 2 for Q2_K/Q3_K; a
//                    slice's `bits` words hold element 4c + i in byte i of word c % bits, at
//                    bit bits * (c / bits)), then the high bits the same way (Q5_K, Q3_K: 1;
//                    Q6_K: 2), then every super-block's packed scales as GGML stores them
//                    (Q2_K, Q6_K: 16 bytes; Q3_K, Q4_K, Q5_K: 12), then its fp16 d (and dmin
//                    for Q2_K, Q4_K, Q5_K). The same bytes as GGML's, in another order.
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
