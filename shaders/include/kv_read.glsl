// Reads keys and values from a paged KV store, dequantised from the store's GGML row layout.
// The includer defines KV_F32, KV_F16 or KV_Q8_0, the bindings KV_KEYS_BINDING and
// KV_VALUES_BINDING (and with KV_SPLIT what kv_parts.glsl needs), and a push-constant block
// `p` with `kv_dim` (elements per row).
//   key(slot, col) / value(slot, col):   one element
//   key4(slot, col) / value4(slot, col): elements col .. col + 3, for col % 4 == 0
//   key_block(slot, col, parts) / value_block(...): Q8_0 only, elements col .. col + 31 of one
//                                        block (col % 32 == 0) as 8 vec4, 9 loads in all
// Rows of slot s start at element s * kv_dim (F32, F16) or byte s * kv_dim / 32 * 34 (Q8_0)
// of their part (kv_parts.glsl); ENTRY(part, i) is entry i of a part.
#include "half.glsl"
#include "kv_parts.glsl"

#if defined(KV_F32)
// vec4 entries: one wide load per four elements (kv_dim % 4 == 0 for key4 / value4).
#define KV_ENTRY vec4
#define KV_LOADERS(NAME, ENTRY)                                                       \
  float NAME(uint slot, uint col) {                                                   \
    const uint i = kv_row(slot) * p.kv_dim + col;                                     \
    return ENTRY(kv_part(slot), i >> 2)[i & 3u];                                      \
  }                                                                                   \
  vec4 NAME##4(uint slot, uint col) {                                                 \
    return ENTRY(kv_part(slot), (kv_row(slot) * p.kv_dim + col) >> 2);                \
  }

#elif defined(KV_F16)
// uvec2 entries: four halves per load.
#define KV_ENTRY uvec2
uint half_bits_at(uvec2 entry, uint i) {  // half i % 4 of the entry
  return (entry[(i >> 1) & 1u] >> ((i & 1u) * 16u)) & 0xFFFFu;
}
vec4 four_halves(uvec2 entry) {
  return halves_to_floats(uvec4(entry.x & 0xFFFFu, entry.x >> 16, entry.y & 0xFFFFu, entry.y >> 16));
}
#define KV_LOADERS(NAME, ENTRY)                                                       \
  float NAME(uint slot, uint col) {                                                   \
    const uint i = kv_row(slot) * p.kv_dim + col;                                     \
    return half_to_float(half_bits_at(ENTRY(kv_part(slot), i >> 2), i));              \
  }                                                                                   \
  vec4 NAME##4(uint slot, uint col) {                                                 \
    return four_halves(ENTRY(kv_part(slot), (kv_row(slot) * p.kv_dim + col) >> 2));   \
  }

#elif defined(KV_Q8_0)
// uint words; blocks of 34 bytes (fp16 scale, 32 int8) start at even byte offsets.
#define KV_ENTRY uint
uint q8_block_byte(uint slot, uint col) { return (kv_row(slot) * (p.kv_dim / 32u) + col / 32u) * 34u; }
// The four int8 starting at an even byte offset, as a vec4.
vec4 four_int8(uint w) {
  const int s = int(w);
  return vec4(bitfieldExtract(s, 0, 8), bitfieldExtract(s, 8, 8), bitfieldExtract(s, 16, 8),
              bitfieldExtract(s, 24, 8));
}
#define KV_LOADERS(NAME, ENTRY)                                                             \
  float NAME##_scale(uint part, uint block_byte) {                                          \
    return half_to_float((ENTRY(part, block_byte >> 2) >> ((block_byte & 2u) * 8u)) &       \
                         0xFFFFu);                                                          \
  }                                                                                         \
  float NAME(uint slot, uint col) {                                                         \
    const uint part = kv_part(slot);                                                        \
    const uint block = q8_block_byte(slot, col);                                            \
    const uint at = block + 2u + col % 32u;                                                 \
    return float(bitfieldExtract(int(ENTRY(part, at >> 2)), int((at & 3u) * 8u), 8)) *      \
           NAME##_scale(part, block);                                                       \
  }                                                                                         \
  vec4 NAME##4(uint slot, uint col) {                                                       \
    const uint part = kv_part(slot);                                                        \
    const uint block = q8_block_byte(slot, col);                                            \
    const uint at = block + 2u + col % 32u; /* even */                                      \
    const uint w = (at & 2u) == 0u                                                          \
                       ? ENTRY(part, at >> 2)                                               \
                       : (ENTRY(part, at >> 2) >> 16) | (ENTRY(part, (at >> 2) + 1u) << 16); \
    return four_int8(w) * NAME##_scale(part, block);                                        \
  }                                                                                         \
  void NAME##_block(uint slot, uint col, out vec4 parts[8]) {                               \
    const uint part = kv_part(slot);                                                        \
    const uint block = q8_block_byte(slot, col);                                            \
    const uint first = block >> 2;                                                          \
    uint words[9]; /* the block's 34 bytes lie in these 9 words */                          \
    [[unroll]] for (uint i = 0u; i < 9u; ++i) words[i] = ENTRY(part, first + i);            \
    /* At byte 2 of a word, the scale is its high half and the quants start word aligned; */ \
    /* at byte 0, every quant word straddles two loaded words. */                           \
    const bool scale_high = (block & 2u) != 0u;                                             \
    const float scale = half_to_float(scale_high ? words[0] >> 16 : words[0] & 0xFFFFu);    \
    [[unroll]] for (uint c = 0u; c < 8u; ++c) {                                             \
      const uint w = scale_high ? words[c + 1u] : (words[c] >> 16) | (words[c + 1u] << 16); \
      parts[c] = four_int8(w) * scale;                                                      \
    }                                                                                       \
  }

#else
#error "define KV_F32, KV_F16 or KV_Q8_0"
#endif

#if defined(KV_SPLIT)
// clang-format off
layout(std430, binding = KV_KEYS_BINDING) readonly buffer KeyStore0 { KV_ENTRY key_store0[]; };
layout(std430, binding = KV_EXTRA_BINDING) readonly buffer KeyStore1 { KV_ENTRY key_store1[]; };
layout(std430, binding = KV_EXTRA_BINDING + 1) readonly buffer KeyStore2 { KV_ENTRY key_store2[]; };
layout(std430, binding = KV_EXTRA_BINDING + 2) readonly buffer KeyStore3 { KV_ENTRY key_store3[]; };
layout(std430, binding = KV_VALUES_BINDING) readonly buffer ValueStore0 { KV_ENTRY value_store0[]; };
layout(std430, binding = KV_EXTRA_BINDING + 3) readonly buffer ValueStore1 { KV_ENTRY value_store1[]; };
layout(std430, binding = KV_EXTRA_BINDING + 4) readonly buffer ValueStore2 { KV_ENTRY value_store2[]; };
layout(std430, binding = KV_EXTRA_BINDING + 5) readonly buffer ValueStore3 { KV_ENTRY value_store3[]; };
// clang-format on
#else
layout(std430, binding = KV_KEYS_BINDING) readonly buffer KeyStore { KV_ENTRY key_store[]; };
layout(std430, binding = KV_VALUES_BINDING) readonly buffer ValueStore { KV_ENTRY value_store[]; };
#endif
#define KEY_ENTRY(part, i) KV_PART_ENTRY(part, key_store, i)
#define VALUE_ENTRY(part, i) KV_PART_ENTRY(part, value_store, i)
KV_LOADERS(key, KEY_ENTRY)
KV_LOADERS(value, VALUE_ENTRY)
