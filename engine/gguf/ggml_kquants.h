// GGML's K-quant super-block types (Q2_K .. Q6_K): bit-exact dequantisers and ServeScope's own
// quantisers. Block layouts are described at the structs in ggml_types.h; callers normally go
// through dequantize_row / quantize_row there, which check sizes and dispatch here.
#pragma once

#include <cstdint>

namespace servescope::gguf::kquants {

// Each decodes `blocks` super-blocks of 256 elements from unaligned bytes, in float32 exactly
// as GGML's dequantize_row_q*_K does (same products, same order).
void dequantize_q2_k(const uint8_t* src, float* dst, int64_t blocks);
void dequantize_q3_k(const uint8_t* src, float* dst, int64_t blocks);
void dequantize_q4_k(const uint8_t* src, float* dst, int64_t blocks);
void dequantize_q5_k(const uint8_t* src, float* dst, int64_t blocks);
void dequantize_q6_k(const uint8_t* src, float* dst, int64_t blocks);

// Each encodes `blocks` super-blocks. Per sub-block, a small grid of candidate scales around
// the range-filling one, each refined by a least-squares fit of scale (and minimum) to its
// rounded quants, keeps the lowest squared error (of those quants); the sub-block scales (and minimums) are then
// rounded to the type's integer width against the super-block's fp16 d (and dmin), and the
// quants are recomputed with the scales as stored. Not llama.cpp's bytes (its search also
// weights elements by x^2), but a mean squared error of the same size.
void quantize_q2_k(const float* src, uint8_t* dst, int64_t blocks);
void quantize_q3_k(const float* src, uint8_t* dst, int64_t blocks);
void quantize_q4_k(const float* src, uint8_t* dst, int64_t blocks);
void quantize_q5_k(const float* src, uint8_t* dst, int64_t blocks);
void quantize_q6_k(const float* src, uint8_t* dst, int64_t blocks);

}  // namespace servescope::gguf::kquants
