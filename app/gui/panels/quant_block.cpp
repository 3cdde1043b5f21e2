#include "app/gui/panels/quant_block.h"

#include <QCoreApplication>
#include <algorithm>
#include <cstring>
#include <string>

#include "engine/core/error.h"
#include "engine/eval/quantize_model.h"

namespace servescope::gui {
namespace {

// The translation context of the picture's words: the fields' meanings and the formulas.
struct QuantBlock {
  Q_DECLARE_TR_FUNCTIONS(QuantBlock)
};

using gguf::GgmlType;
using widgets::QuantBlockSnapshot;

uint16_t read_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint32_t read_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void set_d(QuantBlockSnapshot& b, const uint8_t* p) {
  b.d_bits = read_u16(p);
  b.d = gguf::fp16_to_fp32(b.d_bits);
}

void set_m(QuantBlockSnapshot& b, const uint8_t* p) {
  b.has_min = true;
  b.m_bits = read_u16(p);
  b.m = gguf::fp16_to_fp32(b.m_bits);
}

void set_quants(QuantBlockSnapshot& b, int bits, int min, int max) {
  b.quant_bits = bits;
  b.quant_min = min;
  b.quant_max = max;
}

// The 4-bit quants of a 32-element block, two per byte: the low nibble of byte j is element j,
// the high nibble element j + 16 (Q4_0, Q4_1, and the low bits of Q5_0, Q5_1).
int nibble(const uint8_t* qs, int i) { return i < 16 ? qs[i] & 0x0F : qs[i - 16] >> 4; }

// GGML's block_q8_0: d, then 32 int8 quants; value = d * q.
void describe_q8_0(const uint8_t* p, QuantBlockSnapshot& b) {
  b.layout = {{"d", 2, QuantBlock::tr("scale, fp16")},
              {"qs", 32, QuantBlock::tr("32 quants, 8-bit signed")}};
  set_d(b, p);
  set_quants(b, 8, -128, 127);
  for (int i = 0; i < 32; ++i) b.quants.push_back(static_cast<int8_t>(p[2 + i]));
  b.formula = QuantBlock::tr("x = d \u00b7 q");
}

// block_q4_0: d, 16 bytes of nibbles; value = d * (nibble - 8).
void describe_q4_0(const uint8_t* p, QuantBlockSnapshot& b) {
  b.layout = {{"d", 2, QuantBlock::tr("scale, fp16")},
              {"qs", 16, QuantBlock::tr("32 quants, 4 bits each, two per byte")}};
  set_d(b, p);
  set_quants(b, 4, -8, 7);
  for (int i = 0; i < 32; ++i) b.quants.push_back(nibble(p + 2, i) - 8);
  b.formula = QuantBlock::tr("x = d \u00b7 q, q = stored 4 bits \u2212 8");
}

// block_q4_1: d, m, 16 bytes of nibbles; value = d * nibble + m.
void describe_q4_1(const uint8_t* p, QuantBlockSnapshot& b) {
  b.layout = {{"d", 2, QuantBlock::tr("scale, fp16")},
              {"m", 2, QuantBlock::tr("minimum, fp16")},
              {"qs", 16, QuantBlock::tr("32 quants, 4 bits each, two per byte")}};
  set_d(b, p);
  set_m(b, p + 2);
  set_quants(b, 4, 0, 15);
  for (int i = 0; i < 32; ++i) b.quants.push_back(nibble(p + 4, i));
  b.formula = QuantBlock::tr("x = d \u00b7 q + m");
}

// The 5-bit quants of Q5_0 / Q5_1: the nibble and bit i of the little-endian qh.
int five_bits(const uint8_t* qh, const uint8_t* qs, int i) {
  return nibble(qs, i) | static_cast<int>(((read_u32(qh) >> i) & 1U) << 4);
}

// block_q5_0: d, qh (fifth bits), qs; value = d * (q - 16).
void describe_q5_0(const uint8_t* p, QuantBlockSnapshot& b) {
  b.layout = {{"d", 2, QuantBlock::tr("scale, fp16")},
              {"qh", 4, QuantBlock::tr("the fifth bit of each quant")},
              {"qs", 16, QuantBlock::tr("the low 4 bits of each quant, two per byte")}};
  set_d(b, p);
  set_quants(b, 5, -16, 15);
  for (int i = 0; i < 32; ++i) b.quants.push_back(five_bits(p + 2, p + 6, i) - 16);
  b.formula = QuantBlock::tr("x = d \u00b7 q, q = stored 5 bits \u2212 16");
}

// block_q5_1: d, m, qh, qs; value = d * q + m.
void describe_q5_1(const uint8_t* p, QuantBlockSnapshot& b) {
  b.layout = {{"d", 2, QuantBlock::tr("scale, fp16")},
              {"m", 2, QuantBlock::tr("minimum, fp16")},
              {"qh", 4, QuantBlock::tr("the fifth bit of each quant")},
              {"qs", 16, QuantBlock::tr("the low 4 bits of each quant, two per byte")}};
  set_d(b, p);
  set_m(b, p + 2);
  set_quants(b, 5, 0, 31);
  for (int i = 0; i < 32; ++i) b.quants.push_back(five_bits(p + 4, p + 8, i));
  b.formula = QuantBlock::tr("x = d \u00b7 q + m");
}

// ---- K-quants: a 256-element super-block of sub-blocks, each with its own small-integer
// scale (and min) times the super-block's fp16 d (and dmin). Layouts and decoding as GGML's
// block_q*_K and dequantize_row_q*_K.

// A sub-block of `count` elements from `first` with stored integers scale_q and min_q; its
// effective scale and min are computed in float, as GGML's decoder does (d * sc).
void add_sub_block(QuantBlockSnapshot& b, int first, int count, int scale_q, int min_q) {
  widgets::QuantSubBlock sub;
  sub.first = first;
  sub.count = count;
  sub.scale_q = scale_q;
  sub.min_q = min_q;
  sub.scale = static_cast<float>(b.d) * static_cast<float>(scale_q);
  sub.min = b.has_min ? static_cast<float>(b.m) * static_cast<float>(min_q) : 0.0f;
  b.sub_blocks.push_back(sub);
}

// The 6-bit scale and min of sub-block j of Q4_K / Q5_K, packed in 12 bytes (GGML's
// get_scale_min_k4).
std::pair<int, int> scale_min_k4(int j, const uint8_t* q) {
  if (j < 4) return {q[j] & 63, q[j + 4] & 63};
  return {(q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4), (q[j + 4] >> 4) | ((q[j] >> 6) << 4)};
}

// block_q4_K: d, dmin, 12 bytes of scales and mins, 128 bytes of nibbles; in each 64 elements
// the low nibbles of 32 bytes are one sub-block, the high nibbles the next.
void describe_q4_k(const uint8_t* p, QuantBlockSnapshot& b) {
  b.layout = {{"d", 2, QuantBlock::tr("super-block scale, fp16")},
              {"dmin", 2, QuantBlock::tr("super-block scale of the mins, fp16")},
              {"scales", 12, QuantBlock::tr("8 sub-block scales and 8 mins, 6 bits each")},
              {"qs", 128, QuantBlock::tr("256 quants, 4 bits each")}};
  set_d(b, p);
  set_m(b, p + 2);
  set_quants(b, 4, 0, 15);
  for (int j = 0; j < 8; ++j) {
    const auto [sc, m] = scale_min_k4(j, p + 4);
    add_sub_block(b, 32 * j, 32, sc, m);
  }
  const uint8_t* qs = p + 16;
  b.quants.resize(gguf::kSuperBlock);
  for (int i = 0; i < 4; ++i) {
    for (int l = 0; l < 32; ++l) {
      b.quants[64 * i + l] = qs[32 * i + l] & 0x0F;
      b.quants[64 * i + 32 + l] = qs[32 * i + l] >> 4;
    }
  }
  b.formula = QuantBlock::tr("x = (d \u00b7 scale) \u00b7 q \u2212 (dmin \u00b7 min)");
}

// block_q5_K: Q4_K's fields with the fifth bits in 32 bytes (bit 2i / 2i + 1 of byte l for
// element l of the i-th pair of sub-blocks).
void describe_q5_k(const uint8_t* p, QuantBlockSnapshot& b) {
  b.layout = {{"d", 2, QuantBlock::tr("super-block scale, fp16")},
              {"dmin", 2, QuantBlock::tr("super-block scale of the mins, fp16")},
              {"scales", 12, QuantBlock::tr("8 sub-block scales and 8 mins, 6 bits each")},
              {"qh", 32, QuantBlock::tr("the fifth bit of each quant")},
              {"qs", 128, QuantBlock::tr("the low 4 bits of each quant")}};
  set_d(b, p);
  set_m(b, p + 2);
  set_quants(b, 5, 0, 31);
  for (int j = 0; j < 8; ++j) {
    const auto [sc, m] = scale_min_k4(j, p + 4);
    add_sub_block(b, 32 * j, 32, sc, m);
  }
  const uint8_t* qh = p + 16;
  const uint8_t* qs = p + 48;
  b.quants.resize(gguf::kSuperBlock);
  for (int i = 0; i < 4; ++i) {
    for (int l = 0; l < 32; ++l) {
      b.quants[64 * i + l] = (qs[32 * i + l] & 0x0F) + 16 * ((qh[l] >> (2 * i)) & 1);
      b.quants[64 * i + 32 + l] = (qs[32 * i + l] >> 4) + 16 * ((qh[l] >> (2 * i + 1)) & 1);
    }
  }
  b.formula = QuantBlock::tr("x = (d \u00b7 scale) \u00b7 q \u2212 (dmin \u00b7 min)");
}

// block_q6_K: 128 bytes of low nibbles, 64 of high 2-bit pairs, 16 int8 scales, d; 16
// sub-blocks of 16, value = d * scale * (q - 32).
void describe_q6_k(const uint8_t* p, QuantBlockSnapshot& b) {
  b.layout = {{"ql", 128, QuantBlock::tr("the low 4 bits of each quant")},
              {"qh", 64, QuantBlock::tr("the high 2 bits of each quant")},
              {"scales", 16, QuantBlock::tr("16 sub-block scales, 8-bit signed")},
              {"d", 2, QuantBlock::tr("super-block scale, fp16")}};
  set_d(b, p + 208);
  set_quants(b, 6, -32, 31);
  for (int j = 0; j < 16; ++j) add_sub_block(b, 16 * j, 16, static_cast<int8_t>(p[192 + j]), 0);
  b.quants.resize(gguf::kSuperBlock);
  for (int n = 0; n < 2; ++n) {
    const uint8_t* ql = p + 64 * n;
    const uint8_t* qh = p + 128 + 32 * n;
    for (int l = 0; l < 32; ++l) {
      const int at = 128 * n + l;
      b.quants[at] = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
      b.quants[at + 32] = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
      b.quants[at + 64] = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      b.quants[at + 96] = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
    }
  }
  b.formula = QuantBlock::tr("x = (d \u00b7 scale) \u00b7 q, q = stored 6 bits \u2212 32");
}

// The 2-bit quants of Q2_K and Q3_K: in each 128 elements, 32 bytes hold four 2-bit fields;
// field j of byte l is element 32 j + l.
int two_bits(const uint8_t* qs, int e) {
  const int n = e / 128;
  const int j = (e % 128) / 32;
  const int l = e % 32;
  return (qs[32 * n + l] >> (2 * j)) & 3;
}

// block_q2_K: 16 bytes of 4-bit scale and 4-bit min per sub-block of 16, 64 bytes of 2-bit
// quants, d, dmin.
void describe_q2_k(const uint8_t* p, QuantBlockSnapshot& b) {
  b.layout = {{"scales", 16, QuantBlock::tr("16 sub-block scales and mins, 4 bits each")},
              {"qs", 64, QuantBlock::tr("256 quants, 2 bits each")},
              {"d", 2, QuantBlock::tr("super-block scale, fp16")},
              {"dmin", 2, QuantBlock::tr("super-block scale of the mins, fp16")}};
  set_d(b, p + 80);
  set_m(b, p + 82);
  set_quants(b, 2, 0, 3);
  for (int j = 0; j < 16; ++j) add_sub_block(b, 16 * j, 16, p[j] & 0x0F, p[j] >> 4);
  for (int e = 0; e < gguf::kSuperBlock; ++e) b.quants.push_back(two_bits(p + 16, e));
  b.formula = QuantBlock::tr("x = (d \u00b7 scale) \u00b7 q \u2212 (dmin \u00b7 min)");
}

// block_q3_K: 32 bytes of high-bit masks, 64 of 2-bit quants, 12 bytes of 6-bit scales, d;
// value = d * (scale - 32) * (q - 4 when the element's mask bit is clear).
void describe_q3_k(const uint8_t* p, QuantBlockSnapshot& b) {
  b.layout = {{"hmask", 32, QuantBlock::tr("the high bit of each quant")},
              {"qs", 64, QuantBlock::tr("the low 2 bits of each quant")},
              {"scales", 12, QuantBlock::tr("16 sub-block scales, 6 bits each")},
              {"d", 2, QuantBlock::tr("super-block scale, fp16")}};
  set_d(b, p + 108);
  set_quants(b, 3, -4, 3);
  // GGML's unpacking of the 16 6-bit scales from 12 bytes (low 4 bits, then high 2 bits).
  uint32_t aux[4];
  std::memcpy(aux, p + 96, 12);
  const uint32_t tmp = aux[2];
  constexpr uint32_t kLow2 = 0x03030303;
  constexpr uint32_t kLow4 = 0x0f0f0f0f;
  aux[2] = ((aux[0] >> 4) & kLow4) | (((tmp >> 4) & kLow2) << 4);
  aux[3] = ((aux[1] >> 4) & kLow4) | (((tmp >> 6) & kLow2) << 4);
  aux[0] = (aux[0] & kLow4) | (((tmp >> 0) & kLow2) << 4);
  aux[1] = (aux[1] & kLow4) | (((tmp >> 2) & kLow2) << 4);
  int8_t scales[16];
  std::memcpy(scales, aux, sizeof scales);
  for (int j = 0; j < 16; ++j) add_sub_block(b, 16 * j, 16, scales[j] - 32, 0);
  for (int e = 0; e < gguf::kSuperBlock; ++e) {
    const int mask_bit = (p[e % 32] >> (e / 32)) & 1;
    b.quants.push_back(two_bits(p + 32, e) - (mask_bit != 0 ? 0 : 4));
  }
  b.formula = QuantBlock::tr("x = (d \u00b7 scale) \u00b7 q, q = 3 bits \u2212 4");
}

using Describe = void (*)(const uint8_t*, QuantBlockSnapshot&);

struct Picture {
  GgmlType type;
  Describe describe;
};

// From the most bits per weight to the fewest.
constexpr Picture kPictures[] = {
    {GgmlType::Q8_0, describe_q8_0}, {GgmlType::Q6_K, describe_q6_k},
    {GgmlType::Q5_1, describe_q5_1}, {GgmlType::Q5_0, describe_q5_0},
    {GgmlType::Q5_K, describe_q5_k}, {GgmlType::Q4_1, describe_q4_1},
    {GgmlType::Q4_0, describe_q4_0}, {GgmlType::Q4_K, describe_q4_k},
    {GgmlType::Q3_K, describe_q3_k}, {GgmlType::Q2_K, describe_q2_k},
};

// The picture of a type the engine encodes (the K-quants once gguf loads them).
Describe describer(GgmlType type) {
  if (!gguf::is_supported(type)) return nullptr;
  for (const Picture& p : kPictures) {
    if (p.type == type) return p.describe;
  }
  return nullptr;
}

// The tensor the panel's histogram also shows when it can take the type, else another matrix
// of the first layer (a 256-element K-quant block needs rows of a multiple of 256), else the
// first matrix that can.
const gguf::TensorInfo& block_tensor(const gguf::GgufFile& file, GgmlType type) {
  for (const char* name : {"blk.0.ffn_down.weight", "blk.0.ffn_up.weight", "blk.0.attn_q.weight"}) {
    const gguf::TensorInfo* preferred = file.find_tensor(name);
    if (preferred != nullptr && eval::takes_target_type(*preferred, type)) return *preferred;
  }
  for (const gguf::TensorInfo& tensor : file.tensors()) {
    if (eval::takes_target_type(tensor, type)) return tensor;
  }
  throw InputError(file.name() + " has no matrix whose rows are whole " +
                   std::string(gguf::type_name(type)) + " blocks");
}

}  // namespace

bool has_block_picture(GgmlType type) { return describer(type) != nullptr; }

std::vector<std::string> block_picture_types() {
  std::vector<std::string> names;
  for (const Picture& p : kPictures) {
    if (describer(p.type) != nullptr) {
      names.push_back(QString::fromLatin1(gguf::type_name(p.type)).toLower().toStdString());
    }
  }
  return names;
}

QuantBlockSnapshot quant_block(const gguf::GgufFile& file, GgmlType type) {
  const Describe describe = describer(type);
  if (describe == nullptr) {
    throw InputError("no block picture for " + std::string(gguf::type_name(type)));
  }
  const gguf::TensorInfo& tensor = block_tensor(file, type);
  const int64_t row_length = tensor.shape[0];
  std::vector<float> row(static_cast<size_t>(row_length));
  gguf::dequantize_row(tensor.type, tensor.data, row.data(), row_length);  // row 0, as stored
  const int64_t n = gguf::block_elements(type);
  std::vector<uint8_t> bytes(static_cast<size_t>(gguf::block_bytes(type)));
  gguf::quantize_row(type, row.data(), bytes.data(), n);
  std::vector<float> decoded(static_cast<size_t>(n));
  gguf::dequantize_row(type, bytes.data(), decoded.data(), n);

  QuantBlockSnapshot b;
  b.type = QString::fromLatin1(gguf::type_name(type)).toLower();
  b.tensor = QString::fromStdString(tensor.name);
  b.block_bytes = static_cast<int>(bytes.size());
  b.originals.assign(row.begin(), row.begin() + n);
  b.reconstructed.assign(decoded.begin(), decoded.end());
  describe(bytes.data(), b);
  return b;
}

std::vector<QuantBlockSnapshot> quant_blocks(const gguf::GgufFile& file) {
  std::vector<QuantBlockSnapshot> blocks;
  for (const Picture& p : kPictures) {
    if (describer(p.type) == nullptr) continue;
    const bool fits =
        std::any_of(file.tensors().begin(), file.tensors().end(),
                    [&](const gguf::TensorInfo& t) { return eval::takes_target_type(t, p.type); });
    if (fits) blocks.push_back(quant_block(file, p.type));
  }
  return blocks;
}

}  // namespace servescope::gui
