// GGML tensor element types: ids, names, block layouts, fp16 conversion and the reference
// (de)quantisers for the types ServeScope loads (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
// and the K-quants Q2_K, Q3_K, Q4_K, Q5_K, Q6_K).
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

// --- K-quants: super-blocks of 256 elements split into sub-blocks of 16 or 32, each sub-block
// with its own small integer scale (and minimum) that multiplies the super-block's fp16 d (and
// dmin). Element order inside a super-block follows GGML's dequantize_row_q*_K.

// Elements per K-quant super-block (GGML's QK_K).
constexpr int kSuperBlock = 256;

// GGML's block_q2_K: 16 sub-blocks of 16. scales[i]: low nibble = scale, high nibble = min of
// sub-block i. qs: 2-bit quants; in each 128-element half h, byte qs[32 h + l] holds, at bits
// 2 j .. 2 j + 1, element 128 h + 32 j + l (j = 0..3, l = 0..31).
// value = d * scale * q - dmin * min.
struct BlockQ2_K {
  uint8_t scales[kSuperBlock / 16];
  uint8_t qs[kSuperBlock / 4];
  uint16_t d;
  uint16_t dmin;
};
static_assert(sizeof(BlockQ2_K) == 84, "Q2_K block must match GGML's 84-byte layout");

// GGML's block_q3_K: 16 sub-blocks of 16, symmetric. qs holds the low 2 bits of each quant as
// Q2_K does; bit j of hmask[l] is the third bit of element 32 j + l (j = 0..7), and a CLEAR bit
// subtracts 4, so q = low2 - (bit ? 0 : 4) in -4..3. The 16 6-bit scales (stored + 32) are
// packed in 12 bytes: scale i's low nibble is the low (i < 8) or high (i >= 8) nibble of
// scales[i % 8]; its high 2 bits are bits 2 (i / 4) .. 2 (i / 4) + 1 of scales[8 + i % 4].
// value = d * (scale - 32) * q.
struct BlockQ3_K {
  uint8_t hmask[kSuperBlock / 8];
  uint8_t qs[kSuperBlock / 4];
  uint8_t scales[12];
  uint16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110, "Q3_K block must match GGML's 110-byte layout");

// The 12-byte packing of eight 6-bit scales and eight 6-bit mins shared by Q4_K and Q5_K: for
// sub-block j < 4, scale = scales[j] & 63 and min = scales[j + 4] & 63; for j >= 4, the low
// nibbles come from scales[j + 4] (scale: low nibble, min: high nibble) and the high 2 bits
// from the top 2 bits of scales[j - 4] (scale) and scales[j] (min).
constexpr int kKScaleBytes = 12;

// GGML's block_q4_K: 8 sub-blocks of 32. In each 64-element chunk c, byte qs[32 c + l] holds
// element 64 c + l in its low nibble and element 64 c + 32 + l in its high nibble.
// value = d * scale * q - dmin * min.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qs[kSuperBlock / 2];
};
static_assert(sizeof(BlockQ4_K) == 144, "Q4_K block must match GGML's 144-byte layout");

// GGML's block_q5_K: Q4_K's scales and low nibbles plus a fifth bit per quant: bit 2 c of
// qh[l] belongs to element 64 c + l, bit 2 c + 1 to element 64 c + 32 + l.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kSuperBlock / 8];
  uint8_t qs[kSuperBlock / 2];
};
static_assert(sizeof(BlockQ5_K) == 176, "Q5_K block must match GGML's 176-byte layout");

// GGML's block_q6_K: 16 sub-blocks of 16 with signed 8-bit scales; 6-bit quants stored + 32.
// In each 128-element half h (ql += 64 h, qh += 32 h), for l = 0..31: element 128 h + l is the
// low nibble of ql[l], + 32 the low nibble of ql[l + 32], + 64 the high nibble of ql[l], + 96
// the high nibble of ql[l + 32]; their top 2 bits are bits 0-1, 2-3, 4-5, 6-7 of qh[l].
// value = d * scale * (q - 32).
struct BlockQ6_K {
  uint8_t ql[kSuperBlock / 2];
  uint8_t qh[kSuperBlock / 4];
  int8_t scales[kSuperBlock / 16];
  uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210, "Q6_K block must match GGML's 210-byte layout");

// True for the types ServeScope loads: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and the
// K-quants Q2_K .. Q6_K. A
// backend may support fewer (each refuses the others when weights are uploaded).
bool is_supported(GgmlType type);

// "F32", "Q5_K", ...; "unknown" for an id GGML does not define.
std::string_view type_name(GgmlType type);

// "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K": for error
// messages.
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
// GGML's reference quantisers bit for bit for the 32-element types; for the K-quants it runs
// its own per-sub-block scale/min search (ggml_kquants.h), whose bytes differ from llama.cpp's
// but whose error is of the same size. Throw GgufError for unsupported types or bad n.
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);
void quantize_row(GgmlType type, const float* src, void* dst, int64_t n);

}  // namespace servescope::gguf
