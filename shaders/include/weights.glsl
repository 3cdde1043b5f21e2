// Reading weights in the backend's device layout (written by VulkanBackend::upload_matrix from
// GGML's bytes, see weight_layout.h). The includer defines exactly one of WEIGHT_F32,
// WEIGHT_F16, WEIGHT_BF16, WEIGHT_Q8_0, WEIGHT_Q4_0, WEIGHT_Q4_1, WEIGHT_Q5_0, WEIGHT_Q5_1 and
// binds the weights at binding 0.
//   F32, F16, BF16  rows padded to a multiple of 4 elements, so a row starts 16 (8) bytes
//                   aligned and 4 elements load as one uvec4 (uvec2).
//   block types     the quants of all blocks first (32 bytes per Q8_0 block, 16 per 4-bit
//                   block, row-major block order); for Q5_0 / Q5_1 then every block's 32
//                   fifth bits (one word, bit j = element j); then the scales: one fp16 d per
//                   block (Q8_0, Q4_0, Q5_0), or one word of fp16 d and fp16 m (Q4_1, Q5_1).
//                   GGML's blocks start on 2-byte boundaries; the split layout loads a block's
//                   quants as 16-byte units.
// Only 32-bit loads: no 8/16-bit storage feature needed. Fewer, wider loads matter on every
// device, and most on lavapipe, where each load instruction loops over the SIMD lanes.
layout(std430, binding = 0) readonly buffer Weights { uint words[]; } weights;
layout(std430, binding = 0) readonly buffer Weights2 { uvec2 words2[]; } weights2;
layout(std430, binding = 0) readonly buffer Weights4 { uvec4 words4[]; } weights4;

uint padded_cols(uint cols) { return (cols + 3u) & ~3u; }

#if defined(WEIGHT_F32) || defined(WEIGHT_F16) || defined(WEIGHT_BF16)
#define WEIGHT_PLAIN 1
#endif
#if defined(WEIGHT_Q4_0) || defined(WEIGHT_Q4_1) || defined(WEIGHT_Q5_0) || defined(WEIGHT_Q5_1)
#define WEIGHT_NIBBLES 1  // two 4-bit quants per byte: element j low, j + 16 high
#endif
#if defined(WEIGHT_Q5_0) || defined(WEIGHT_Q5_1)
#define WEIGHT_HIGH_BITS 1
#endif
#if defined(WEIGHT_Q4_1) || defined(WEIGHT_Q5_1)
#define WEIGHT_MIN 1  // value = q * d + m
#endif

#if defined(WEIGHT_Q8_0)
const uint kQuantWordsPerBlock = 8u;
#elif defined(WEIGHT_NIBBLES)
const uint kQuantWordsPerBlock = 4u;
#endif
// What the stored quant is offset by: value = (q - offset) * d.
#if defined(WEIGHT_Q4_0)
const float kQuantOffset = 8.0;
#elif defined(WEIGHT_Q5_0)
const float kQuantOffset = 16.0;
#else
const float kQuantOffset = 0.0;
#endif

#if defined(WEIGHT_PLAIN)
// Four consecutive weights of a padded row, `index` in units of 4 elements.
vec4 load_weights4(uint index) {
#if defined(WEIGHT_F32)
  return uintBitsToFloat(weights4.words4[index]);
#elif defined(WEIGHT_F16)
  const uvec2 halves = weights2.words2[index];
  return vec4(unpackHalf2x16(halves.x), unpackHalf2x16(halves.y));
#else
  const uvec2 pairs = weights2.words2[index];  // bfloat16: the top half of a float32
  return uintBitsToFloat(uvec4(pairs.x << 16, pairs.x & 0xffff0000u, pairs.y << 16,
                               pairs.y & 0xffff0000u));
#endif
}
#else
uint quant_words(uint rows, uint cols) { return rows * (cols / 32u) * kQuantWordsPerBlock; }

#if defined(WEIGHT_HIGH_BITS)
// The fifth bits of block `block`'s 32 quants (bit j = element j).
uint block_high_bits(uint block, uint rows, uint cols) {
  return weights.words[quant_words(rows, cols) + block];
}
uint scales_start(uint rows, uint cols) { return quant_words(rows, cols) + rows * (cols / 32u); }
#else
uint scales_start(uint rows, uint cols) { return quant_words(rows, cols); }
#endif

#if defined(WEIGHT_MIN)
// Scale d (x) and minimum m (y) of block `block`.
vec2 block_scale_min(uint block, uint rows, uint cols) {
  return unpackHalf2x16(weights.words[scales_start(rows, cols) + block]);
}
float block_scale(uint block, uint rows, uint cols) { return block_scale_min(block, rows, cols).x; }
#else
// Scale of block `block` (row-major over the chunk's rows x cols/32 blocks).
float block_scale(uint block, uint rows, uint cols) {
  return unpackHalf2x16(weights.words[scales_start(rows, cols) + (block >> 1)])[block & 1u];
}
#endif
#endif

#if defined(WEIGHT_NIBBLES)
// Quants 4c .. 4c+3 (lo) and 16+4c .. 16+4c+3 (hi) of a 4-bit block from its quant word c and
// its fifth bits (0 for Q4_0 / Q4_1), minus kQuantOffset.
void nibble_quads(uint word, uint high, uint c, out vec4 lo, out vec4 hi) {
  lo = vec4(word & 0xfu, (word >> 8) & 0xfu, (word >> 16) & 0xfu, (word >> 24) & 0xfu);
  hi = vec4((word >> 4) & 0xfu, (word >> 12) & 0xfu, (word >> 20) & 0xfu, word >> 28);
#if defined(WEIGHT_HIGH_BITS)
  const uint lo_bits = (high >> (4u * c)) & 0xfu;
  const uint hi_bits = (high >> (16u + 4u * c)) & 0xfu;
  lo += 16.0 * vec4(lo_bits & 1u, (lo_bits >> 1) & 1u, (lo_bits >> 2) & 1u, lo_bits >> 3);
  hi += 16.0 * vec4(hi_bits & 1u, (hi_bits >> 1) & 1u, (hi_bits >> 2) & 1u, hi_bits >> 3);
#endif
  lo -= kQuantOffset;
  hi -= kQuantOffset;
}
#endif

// Element (row, k) of the chunk's [rows x cols] matrix, dequantised.
float weight_at(uint row, uint k, uint rows, uint cols) {
#if defined(WEIGHT_F32)
  return uintBitsToFloat(weights.words[row * padded_cols(cols) + k]);
#elif defined(WEIGHT_F16)
  const uint e = row * padded_cols(cols) + k;
  return unpackHalf2x16(weights.words[e >> 1])[e & 1u];
#elif defined(WEIGHT_BF16)
  const uint e = row * padded_cols(cols) + k;
  const uint word = weights.words[e >> 1];
  return uintBitsToFloat((e & 1u) == 0u ? word << 16 : word & 0xffff0000u);
#else
  const uint block = row * (cols / 32u) + k / 32u;
  const uint j = k % 32u;
#if defined(WEIGHT_Q8_0)
  const uint word = weights.words[block * kQuantWordsPerBlock + j / 4u];
  return block_scale(block, rows, cols) * float(bitfieldExtract(int(word), int(8u * (j % 4u)), 8));
#else
  const uint word = weights.words[block * kQuantWordsPerBlock + (j & 15u) / 4u];
  const uint byte_value = (word >> (8u * (j % 4u))) & 0xffu;
  uint q = j < 16u ? (byte_value & 0xfu) : (byte_value >> 4);
#if defined(WEIGHT_HIGH_BITS)
  q |= ((block_high_bits(block, rows, cols) >> j) & 1u) << 4;
#endif
#if defined(WEIGHT_MIN)
  const vec2 dm = block_scale_min(block, rows, cols);
  precise const float scaled = float(q) * dm.x;  // rounded, then added: GGML's q * d + m
  return scaled + dm.y;
#else
  return block_scale(block, rows, cols) * (float(q) - kQuantOffset);
#endif
#endif
#endif
}
