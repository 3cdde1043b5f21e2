#include "engine/gguf/ggml_types.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "engine/core/error.h"
#include "engine/gguf/block_io.h"
#include "engine/gguf/ggml_kquants.h"

namespace servescope::gguf {
namespace {

using Kind = GgufError::Kind;

struct TypeName {
  GgmlType type;
  std::string_view name;
};

constexpr std::array<TypeName, 29> kTypeNames = {{
    {GgmlType::F32, "F32"},       {GgmlType::F16, "F16"},         {GgmlType::Q4_0, "Q4_0"},
    {GgmlType::Q4_1, "Q4_1"},     {GgmlType::Q5_0, "Q5_0"},       {GgmlType::Q5_1, "Q5_1"},
    {GgmlType::Q8_0, "Q8_0"},     {GgmlType::Q8_1, "Q8_1"},       {GgmlType::Q2_K, "Q2_K"},
    {GgmlType::Q3_K, "Q3_K"},     {GgmlType::Q4_K, "Q4_K"},       {GgmlType::Q5_K, "Q5_K"},
    {GgmlType::Q6_K, "Q6_K"},     {GgmlType::Q8_K, "Q8_K"},       {GgmlType::IQ2_XXS, "IQ2_XXS"},
    {GgmlType::IQ2_XS, "IQ2_XS"}, {GgmlType::IQ3_XXS, "IQ3_XXS"}, {GgmlType::IQ1_S, "IQ1_S"},
    {GgmlType::IQ4_NL, "IQ4_NL"}, {GgmlType::IQ3_S, "IQ3_S"},     {GgmlType::IQ2_S, "IQ2_S"},
    {GgmlType::IQ4_XS, "IQ4_XS"}, {GgmlType::I8, "I8"},           {GgmlType::I16, "I16"},
    {GgmlType::I32, "I32"},       {GgmlType::I64, "I64"},         {GgmlType::F64, "F64"},
    {GgmlType::IQ1_M, "IQ1_M"},   {GgmlType::BF16, "BF16"},
}};

// Bytes of one block and elements in it, for the supported types.
struct BlockLayout {
  int64_t elements;
  int64_t bytes;
};

BlockLayout layout_of(GgmlType type) {
  switch (type) {
    case GgmlType::F32:
      return {1, 4};
    case GgmlType::F16:
      return {1, 2};
    case GgmlType::Q8_0:
      return {kQuantBlock, static_cast<int64_t>(sizeof(BlockQ8_0))};
    case GgmlType::Q4_0:
      return {kQuantBlock, static_cast<int64_t>(sizeof(BlockQ4_0))};
    case GgmlType::BF16:
      return {1, 2};
    case GgmlType::Q4_1:
      return {kQuantBlock, static_cast<int64_t>(sizeof(BlockQ4_1))};
    case GgmlType::Q5_0:
      return {kQuantBlock, static_cast<int64_t>(sizeof(BlockQ5_0))};
    case GgmlType::Q5_1:
      return {kQuantBlock, static_cast<int64_t>(sizeof(BlockQ5_1))};
    case GgmlType::Q2_K:
      return {kSuperBlock, static_cast<int64_t>(sizeof(BlockQ2_K))};
    case GgmlType::Q3_K:
      return {kSuperBlock, static_cast<int64_t>(sizeof(BlockQ3_K))};
    case GgmlType::Q4_K:
      return {kSuperBlock, static_cast<int64_t>(sizeof(BlockQ4_K))};
    case GgmlType::Q5_K:
      return {kSuperBlock, static_cast<int64_t>(sizeof(BlockQ5_K))};
    case GgmlType::Q6_K:
      return {kSuperBlock, static_cast<int64_t>(sizeof(BlockQ6_K))};
    default:
      break;
  }
  throw GgufError(Kind::kUnsupportedTensorType,
                  "tensor type " + std::string(type_name(type)) + " (id " +
                      std::to_string(static_cast<uint32_t>(type)) +
                      ") is not supported; supported: " + supported_types_list());
}

// Number of blocks in n elements; throws when n is negative or not a whole number of blocks.
int64_t block_count(GgmlType type, int64_t n) {
  const BlockLayout layout = layout_of(type);
  if (n < 0 || n % layout.elements != 0) {
    throw GgufError(Kind::kMalformed,
                    std::to_string(n) + " elements of type " + std::string(type_name(type)) +
                        ": expected a non-negative multiple of " + std::to_string(layout.elements));
  }
  return n / layout.elements;
}

// C's (int8_t) cast of a float, made total: NaN gives 0 and out-of-range values saturate
// instead of being undefined. Exact for the in-range values the quantisers produce.
int8_t truncate_to_int8(float v) {
  if (!(v == v)) return 0;
  if (v >= 127.0f) return 127;
  if (v <= -128.0f) return -128;
  return static_cast<int8_t>(v);
}

uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void dequantize_q8_0(const uint8_t* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b) {
    BlockQ8_0 block;
    std::memcpy(&block, src + b * static_cast<int64_t>(sizeof block), sizeof block);
    const float d = fp16_to_fp32(block.d);
    for (int j = 0; j < kQuantBlock; ++j)
      dst[b * kQuantBlock + j] = static_cast<float>(block.qs[j]) * d;
  }
}

void dequantize_q4_0(const uint8_t* src, float* dst, int64_t blocks) {
  constexpr int kHalf = kQuantBlock / 2;
  for (int64_t b = 0; b < blocks; ++b) {
    BlockQ4_0 block;
    std::memcpy(&block, src + b * static_cast<int64_t>(sizeof block), sizeof block);
    const float d = fp16_to_fp32(block.d);
    float* out = dst + b * kQuantBlock;
    for (int j = 0; j < kHalf; ++j) {
      out[j] = static_cast<float>((block.qs[j] & 0x0F) - 8) * d;
      out[j + kHalf] = static_cast<float>((block.qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_q4_1(const uint8_t* src, float* dst, int64_t blocks) {
  constexpr int kHalf = kQuantBlock / 2;
  for (int64_t b = 0; b < blocks; ++b) {
    const auto block = load_block<BlockQ4_1>(src, b);
    const float d = fp16_to_fp32(block.d);
    const float m = fp16_to_fp32(block.m);
    float* out = dst + b * kQuantBlock;
    for (int j = 0; j < kHalf; ++j) {
      out[j] = static_cast<float>(block.qs[j] & 0x0F) * d + m;
      out[j + kHalf] = static_cast<float>(block.qs[j] >> 4) * d + m;
    }
  }
}

// The 5-bit quants of a Q5_0 / Q5_1 block: low nibbles from qs, bit j of qh on top of quant j.
void unpack_q5(const uint8_t (&qh)[4], const uint8_t (&qs)[kQuantBlock / 2],
               int (&q)[kQuantBlock]) {
  constexpr int kHalf = kQuantBlock / 2;
  uint32_t high;
  std::memcpy(&high, qh, sizeof high);  // little-endian, as GGML stores it
  for (int j = 0; j < kHalf; ++j) {
    q[j] = (qs[j] & 0x0F) | static_cast<int>(((high >> j) & 1u) << 4);
    q[j + kHalf] = (qs[j] >> 4) | static_cast<int>(((high >> (j + kHalf)) & 1u) << 4);
  }
}

void dequantize_q5_0(const uint8_t* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b) {
    const auto block = load_block<BlockQ5_0>(src, b);
    const float d = fp16_to_fp32(block.d);
    int q[kQuantBlock];
    unpack_q5(block.qh, block.qs, q);
    for (int j = 0; j < kQuantBlock; ++j)
      dst[b * kQuantBlock + j] = static_cast<float>(q[j] - 16) * d;
  }
}

void dequantize_q5_1(const uint8_t* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b) {
    const auto block = load_block<BlockQ5_1>(src, b);
    const float d = fp16_to_fp32(block.d);
    const float m = fp16_to_fp32(block.m);
    int q[kQuantBlock];
    unpack_q5(block.qh, block.qs, q);
    for (int j = 0; j < kQuantBlock; ++j)
      dst[b * kQuantBlock + j] = static_cast<float>(q[j]) * d + m;
  }
}

// Smallest and largest value of a block, as GGML's loops find them.
std::pair<float, float> block_min_max(const float* x) {
  float min = std::numeric_limits<float>::max();
  float max = -std::numeric_limits<float>::max();
  for (int j = 0; j < kQuantBlock; ++j) {
    min = std::min(min, x[j]);
    max = std::max(max, x[j]);
  }
  return {min, max};
}

// The value of largest magnitude (the first one on ties), as GGML's Q4_0 / Q5_0 loops find it.
float signed_absmax(const float* x) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < kQuantBlock; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

// Packs 32 quants of 0..31: low nibbles as Q4_0, the fifth bits into qh (bit j = element j).
void pack_q5(const int (&q)[kQuantBlock], uint8_t (&qh)[4], uint8_t (&qs)[kQuantBlock / 2]) {
  constexpr int kHalf = kQuantBlock / 2;
  uint32_t high = 0;
  for (int j = 0; j < kHalf; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + kHalf] & 0x0F) << 4));
    high |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
    high |= static_cast<uint32_t>((q[j + kHalf] >> 4) & 1) << (j + kHalf);
  }
  std::memcpy(qh, &high, sizeof high);
}

// GGML's quantize_row_q4_1_ref: d = (max - min) / 15, q = min(15, trunc((x - min) / d + 0.5)).
void quantize_q4_1(const float* src, uint8_t* dst, int64_t blocks) {
  constexpr int kHalf = kQuantBlock / 2;
  for (int64_t b = 0; b < blocks; ++b) {
    const float* x = src + b * kQuantBlock;
    const auto [min, max] = block_min_max(x);
    const float d = (max - min) / 15;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    // min = min: clang 14 (the fuzz preset) cannot capture a structured binding implicitly.
    auto quant = [&, min = min](float v) {
      return static_cast<uint8_t>(std::min<int>(15, truncate_to_int8((v - min) * id + 0.5f)));
    };
    BlockQ4_1 block;
    block.d = fp32_to_fp16(d);
    block.m = fp32_to_fp16(min);
    for (int j = 0; j < kHalf; ++j) {
      block.qs[j] = static_cast<uint8_t>(quant(x[j]) | (quant(x[j + kHalf]) << 4));
    }
    store_block(block, dst, b);
  }
}

// GGML's quantize_row_q5_0_ref: d = m / -16 (m as in Q4_0), q = min(31, trunc(x / d + 16.5)).
void quantize_q5_0(const float* src, uint8_t* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b) {
    const float* x = src + b * kQuantBlock;
    const float d = signed_absmax(x) / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int q[kQuantBlock];
    for (int j = 0; j < kQuantBlock; ++j)
      q[j] = std::clamp<int>(truncate_to_int8(x[j] * id + 16.5f), 0, 31);
    BlockQ5_0 block;
    block.d = fp32_to_fp16(d);
    pack_q5(q, block.qh, block.qs);
    store_block(block, dst, b);
  }
}

// GGML's quantize_row_q5_1_ref: d = (max - min) / 31, q = trunc((x - min) / d + 0.5).
void quantize_q5_1(const float* src, uint8_t* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b) {
    const float* x = src + b * kQuantBlock;
    const auto [min, max] = block_min_max(x);
    const float d = (max - min) / 31;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int q[kQuantBlock];
    for (int j = 0; j < kQuantBlock; ++j)
      q[j] = std::clamp<int>(truncate_to_int8((x[j] - min) * id + 0.5f), 0, 31);
    BlockQ5_1 block;
    block.d = fp32_to_fp16(d);
    block.m = fp32_to_fp16(min);
    pack_q5(q, block.qh, block.qs);
    store_block(block, dst, b);
  }
}

// GGML's quantize_row_q8_0_reference: d = max|x| / 127, q = roundf(x / d).
void quantize_q8_0(const float* src, uint8_t* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b) {
    const float* x = src + b * kQuantBlock;
    float amax = 0.0f;
    for (int j = 0; j < kQuantBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_0 block;
    block.d = fp32_to_fp16(d);
    for (int j = 0; j < kQuantBlock; ++j) block.qs[j] = truncate_to_int8(std::round(x[j] * id));
    std::memcpy(dst + b * static_cast<int64_t>(sizeof block), &block, sizeof block);
  }
}

// GGML's quantize_row_q4_0_reference: d = m / -8 where m is the value of largest magnitude
// (the first one on ties), q = min(15, trunc(x / d + 8.5)).
void quantize_q4_0(const float* src, uint8_t* dst, int64_t blocks) {
  constexpr int kHalf = kQuantBlock / 2;
  for (int64_t b = 0; b < blocks; ++b) {
    const float* x = src + b * kQuantBlock;
    float amax = 0.0f;
    float max = 0.0f;
    for (int j = 0; j < kQuantBlock; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    auto quant = [&](float v) {
      return static_cast<uint8_t>(std::clamp<int>(truncate_to_int8(v * id + 8.5f), 0, 15));
    };
    BlockQ4_0 block;
    block.d = fp32_to_fp16(d);
    for (int j = 0; j < kHalf; ++j) {
      block.qs[j] = static_cast<uint8_t>(quant(x[j]) | (quant(x[j + kHalf]) << 4));
    }
    std::memcpy(dst + b * static_cast<int64_t>(sizeof block), &block, sizeof block);
  }
}

}  // namespace

bool is_supported(GgmlType type) {
  switch (type) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16:
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
      return true;
    default:
      return false;
  }
}

std::string_view type_name(GgmlType type) {
  for (const TypeName& entry : kTypeNames) {
    if (entry.type == type) return entry.name;
  }
  return "unknown";
}

std::string supported_types_list() {
  return "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K";
}

int64_t block_elements(GgmlType type) { return layout_of(type).elements; }

int64_t block_bytes(GgmlType type) { return layout_of(type).bytes; }

uint64_t row_bytes(GgmlType type, int64_t n) {
  const auto blocks = static_cast<uint64_t>(block_count(type, n));
  const auto bytes_per_block = static_cast<uint64_t>(layout_of(type).bytes);
  if (blocks > std::numeric_limits<uint64_t>::max() / bytes_per_block) {
    throw GgufError(Kind::kMalformed, std::to_string(n) + " elements of type " +
                                          std::string(type_name(type)) +
                                          " need more than 2^64 bytes");
  }
  return blocks * bytes_per_block;
}

float fp16_to_fp32(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1Fu;
  const uint32_t mantissa = half & 0x3FFu;
  if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign != 0 ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t fp32_to_fp16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) {  // NaN: quiet it, keep the top payload bits
    return static_cast<uint16_t>(sign | 0x7E00u | ((magnitude >> 13) & 0x3FFu));
  }
  // 65520 is halfway between 65504 (the largest half) and 65536; ties-to-even goes up.
  if (magnitude >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);
  if (magnitude < 0x38800000u) {  // below 2^-14: a half subnormal (or zero)
    const uint32_t exponent = magnitude >> 23;
    const uint32_t shift = 126 - exponent;  // value / 2^-24 = mantissa >> shift
    if (shift > 24) return sign;            // below 2^-25 rounds to zero
    const uint32_t mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
    uint32_t quotient = mantissa >> shift;
    const uint32_t remainder = mantissa & ((1u << shift) - 1);
    const uint32_t half_unit = 1u << (shift - 1);
    if (remainder > half_unit || (remainder == half_unit && (quotient & 1u))) ++quotient;
    return static_cast<uint16_t>(sign | quotient);
  }
  // Normal: rebias the exponent (127 -> 15) and round away the 13 low mantissa bits; a carry
  // into the exponent is the correct result.
  uint32_t result = (magnitude >> 13) - (112u << 10);
  const uint32_t remainder = magnitude & 0x1FFFu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (result & 1u))) ++result;
  return static_cast<uint16_t>(sign | result);
}

float bf16_to_fp32(uint16_t bf16) {
  return std::bit_cast<float>(static_cast<uint32_t>(bf16) << 16);
}

uint16_t fp32_to_bf16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 64u);
  return static_cast<uint16_t>((bits + (0x7FFFu + ((bits >> 16) & 1u))) >> 16);
}

namespace {

// The 16-bit float types (F16, BF16), element by element.
template <float (*Decode)(uint16_t)>
void decode_16_bit(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = Decode(load_u16(src + 2 * i));
}

template <uint16_t (*Encode)(float)>
void encode_16_bit(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t bits = Encode(src[i]);
    std::memcpy(dst + 2 * i, &bits, sizeof bits);
  }
}

}  // namespace

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  const int64_t blocks = block_count(type, n);
  if (n == 0) return;  // src and dst may be null then
  const auto* bytes = static_cast<const uint8_t*>(src);
  switch (type) {
    case GgmlType::F32:
      std::memcpy(dst, bytes, static_cast<size_t>(n) * sizeof(float));
      return;
    case GgmlType::F16:
      decode_16_bit<fp16_to_fp32>(bytes, dst, n);
      return;
    case GgmlType::Q8_0:
      dequantize_q8_0(bytes, dst, blocks);
      return;
    case GgmlType::Q4_0:
      dequantize_q4_0(bytes, dst, blocks);
      return;
    case GgmlType::BF16:
      decode_16_bit<bf16_to_fp32>(bytes, dst, n);
      return;
    case GgmlType::Q4_1:
      dequantize_q4_1(bytes, dst, blocks);
      return;
    case GgmlType::Q5_0:
      dequantize_q5_0(bytes, dst, blocks);
      return;
    case GgmlType::Q5_1:
      dequantize_q5_1(bytes, dst, blocks);
      return;
    case GgmlType::Q2_K:
      kquants::dequantize_q2_k(bytes, dst, blocks);
      return;
    case GgmlType::Q3_K:
      kquants::dequantize_q3_k(bytes, dst, blocks);
      return;
    case GgmlType::Q4_K:
      kquants::dequantize_q4_k(bytes, dst, blocks);
      return;
    case GgmlType::Q5_K:
      kquants::dequantize_q5_k(bytes, dst, blocks);
      return;
    case GgmlType::Q6_K:
      kquants::dequantize_q6_k(bytes, dst, blocks);
      return;
    default:
      break;
  }
  layout_of(type);  // throws for the unsupported type
}

void quantize_row(GgmlType type, const float* src, void* dst, int64_t n) {
  const int64_t blocks = block_count(type, n);
  if (n == 0) return;
  auto* bytes = static_cast<uint8_t*>(dst);
  switch (type) {
    case GgmlType::F32:
      std::memcpy(bytes, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case GgmlType::F16:
      encode_16_bit<fp32_to_fp16>(src, bytes, n);
      return;
    case GgmlType::Q8_0:
      quantize_q8_0(src, bytes, blocks);
      return;
    case GgmlType::Q4_0:
      quantize_q4_0(src, bytes, blocks);
      return;
    case GgmlType::BF16:
      encode_16_bit<fp32_to_bf16>(src, bytes, n);
      return;
    case GgmlType::Q4_1:
      quantize_q4_1(src, bytes, blocks);
      return;
    case GgmlType::Q5_0:
      quantize_q5_0(src, bytes, blocks);
      return;
    case GgmlType::Q5_1:
      quantize_q5_1(src, bytes, blocks);
      return;
    case GgmlType::Q2_K:
      kquants::quantize_q2_k(src, bytes, blocks);
      return;
    case GgmlType::Q3_K:
      kquants::quantize_q3_k(src, bytes, blocks);
      return;
    case GgmlType::Q4_K:
      kquants::quantize_q4_k(src, bytes, blocks);
      return;
    case GgmlType::Q5_K:
      kquants::quantize_q5_k(src, bytes, blocks);
      return;
    case GgmlType::Q6_K:
      kquants::quantize_q6_k(src, bytes, blocks);
      return;
    default:
      break;
  }
  layout_of(type);
}

}  // namespace servescope::gguf
