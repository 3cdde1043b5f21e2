// GGML tensor element types: ids, names, block layouts, fp16 conversion and the reference
// (de)quantisers for the types ServeScope loads (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace servescope::gguf {

// Type ids as GGML stores them in GGUF tensor infos. Every known id is listed so that error
// messages can name the type a file uses even when ServeScope does not load it.
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  // 4 and 5 (Q4_2, Q4_3) were removed from GGML.
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
};

// Elements per block of the block-quantised types Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1.
constexpr int kQuantBlock = 32;

// GGML's block_q8_0: an fp16 scale and 32 signed 8-bit quants; value = q * d.
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQuantBlock];
};
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 block must match GGML's 34-byte layout");

// GGML's block_q4_0: an fp16 scale and 32 unsigned 4-bit quants, two per byte. The low nibble
// of byte j holds element j, the high nibble element j + 16; value = (q - 8) * d.
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQuantBlock / 2];
};
static_assert(sizeof(BlockQ4_0) == 18, "Q4_0 block must match GGML's 18-byte layout");

// GGML's block_q4_1: fp16 scale d and minimum m, 32 unsigned 4-bit quants packed as in Q4_0;
// value = q * d + m.
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQuantBlock / 2];
};
static_assert(sizeof(BlockQ4_1) == 20, "Q4_1 block must match GGML's 20-byte layout");

// GGML's block_q5_0: fp16 scale, the fifth (high) bit of each quant in a little-endian uint32
// (bit j for element j), the low four bits packed as in Q4_0; value = (q - 16) * d.
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQuantBlock / 2];
};
static_assert(sizeof(BlockQ5_0) == 22, "Q5_0 block must match GGML's 22-byte layout");

// GGML's block_q5_1: Q5_0's quants with an fp16 minimum; value = q * d + m.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQuantBlock / 2];
};
static_assert(sizeof(BlockQ5_1) == 24, "Q5_1 block must match GGML's 24-byte layout");

// True for the types ServeScope loads: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1. A
// backend may support fewer (each refuses the others when weights are uploaded).
bool is_supported(GgmlType type);

// "F32", "Q5_K", ...; "unknown" for an id GGML does not define.
std::string_view type_name(GgmlType type);

// "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1": for error messages.
std::string supported_types_list();

// Elements per block and bytes per block of a supported type (1 and 4 for F32, 32 and 34 for
// Q8_0). Throw GgufError(kUnsupportedTensorType) for any other type.
int64_t block_elements(GgmlType type);
int64_t block_bytes(GgmlType type);

// Bytes that n elements of `type` occupy. Throws GgufError(kMalformed) when n is negative,
// not a multiple of the block size, or the byte count does not fit in 64 bits.
uint64_t row_bytes(GgmlType type, int64_t n);

// IEEE 754 binary16 <-> binary32. fp32_to_fp16 rounds to nearest, ties to even, and keeps
// infinities, NaNs (quiet) and subnormals.
float fp16_to_fp32(uint16_t half);
uint16_t fp32_to_fp16(float value);

// bfloat16 (the top half of a binary32) <-> binary32. fp32_to_bf16 rounds to nearest, ties to
// even, and quiets NaNs, as GGML's ggml_compute_fp32_to_bf16 does.
float bf16_to_fp32(uint16_t bf16);
uint16_t fp32_to_bf16(float value);

// Converts n elements (a multiple of the block size) between float and `type`'s encoding.
// `src` / `dst` of the encoded side need no particular alignment. quantize_row follows
// GGML's reference quantisers bit for bit. Throw GgufError for unsupported types or bad n.
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);
void quantize_row(GgmlType type, const float* src, void* dst, int64_t n);

}  // namespace servescope::gguf
