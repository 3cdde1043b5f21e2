// Reading weights in the backend's device layout (written by VulkanBackend::upload_matrix from
// GGML's bytes, see weight_layout.h). The includer defines exactly one of WEIGHT_F32,
// WEIGHT_F16, WEIGHT_BF16, WEIGHT_Q8_0, WEIGHT_Q4_0, WEIGHT_Q4_1, WEIGHT_Q5_0, WEIGHT_Q5_1,
// WEIGHT_Q2_K, WEIGHT_Q3_K, WEIGHT_Q4_K, WEIGHT_Q5_K, WEIGHT_Q6_K and binds the weights at
// binding 0.
//   F32, F16, BF16  rows padded to a multiple of 4 elements, so a row starts 16 (8) bytes
//                   aligned and 4 elements load as one uvec4 (uvec2).
//   block types     the quants of all blocks first (32 bytes per Q8_0 block, 16 per 4-bit
//                   block, row-major block order); for Q5_0 / Q5_1 then every block's 32
//                   fifth bits (one word, bit j = element j); then the scales: one fp16 d per
//                   block (Q8_0, Q4_0, Q5_0), or one word of fp16 d and fp16 m (Q4_1, Q5_1).
//                   GGML's blocks start on 2-byte boundaries; the split layout loads a block's
//                   quants as 16-byte units.
//   K-quants        planes of the quants' low and high bits per 32-element slice, then each
//                   256-element super-block's packed scales and its fp16 d (and dmin); the
//                   K-QUANTS section below.
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

#if defined(WEIGHT_Q2_K) || defined(WEIGHT_Q3_K) || defined(WEIGHT_Q4_K) || \
    defined(WEIGHT_Q5_K) || defined(WEIGHT_Q6_K)
#define WEIGHT_KQUANT 1
#endif
#if defined(WEIGHT_Q2_K) || defined(WEIGHT_Q4_K) || defined(WEIGHT_Q5_K)
#define WEIGHT_KMIN 1  // value = d * scale * q - dmin * min
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
#elif defined(WEIGHT_KQUANT)
// --- K-QUANTS --------------------------------------------------------------------------------
// Slice g (32 elements, row-major over the chunk) has kLowBits words in the low plane and
// kHighBits in the high plane; element 4c + i of a slice is byte i of word c % bits, at bit
// bits * (c / bits). Super-block b (8 slices) has kScaleWords words of packed scales and its
// d (with dmin: one word; without: half a word).
#if defined(WEIGHT_Q2_K) || defined(WEIGHT_Q3_K)
const uint kLowBits = 2u;
const uint kLowMask = 0x03030303u;
#else
const uint kLowBits = 4u;
const uint kLowMask = 0x0f0f0f0fu;
#endif
#if defined(WEIGHT_Q5_K) || defined(WEIGHT_Q3_K)
#define WEIGHT_KHIGH 1
const uint kHighBits = 1u;
const uint kHighMask = 0x01010101u;
#elif defined(WEIGHT_Q6_K)
#define WEIGHT_KHIGH 1
const uint kHighBits = 2u;
const uint kHighMask = 0x03030303u;
#else
const uint kHighBits = 0u;
#endif
#if defined(WEIGHT_Q3_K) || defined(WEIGHT_Q4_K) || defined(WEIGHT_Q5_K)
const uint kScaleWords = 3u;  // 6-bit scales (and mins) packed into 12 bytes
#else
const uint kScaleWords = 4u;  // Q2_K: a 4-bit scale and min per byte; Q6_K: int8 scales
#endif
// What the combined quant (low | high << kLowBits) is offset by.
#if defined(WEIGHT_Q6_K)
const float kKOffset = 32.0;
#elif defined(WEIGHT_Q3_K)
const float kKOffset = 4.0;  // GGML: subtract 4 where the high bit is clear
#else
const float kKOffset = 0.0;
#endif

uint slice_count(uint rows, uint cols) { return rows * (cols / 32u); }
uint high_plane_start(uint rows, uint cols) { return slice_count(rows, cols) * kLowBits; }
uint kscales_start(uint rows, uint cols) {
  return slice_count(rows, cols) * (kLowBits + kHighBits);
}
uint kd_start(uint rows, uint cols) {
  return kscales_start(rows, cols) + rows * (cols / 256u) * kScaleWords;
}

// A slice's quant bits for every row of an invocation: low plane in low (.xy for 2 bits),
// high plane in high (.x for 1 bit, .xy for 2).
struct KSlice {
  uvec4 low;
  uvec2 high;
};

KSlice load_kslice(uint g, uint rows, uint cols) {
  KSlice q;
#if defined(WEIGHT_Q2_K) || defined(WEIGHT_Q3_K)
  q.low = uvec4(weights2.words2[g], 0u, 0u);
#else
  q.low = weights4.words4[g];
#endif
#if defined(WEIGHT_Q6_K)
  q.high = weights2.words2[high_plane_start(rows, cols) / 2u + g];
#elif defined(WEIGHT_KHIGH)
  q.high = uvec2(weights.words[high_plane_start(rows, cols) + g], 0u);
#else
  q.high = uvec2(0u);
#endif
  return q;
}

// Elements 4c .. 4c+3 of a slice as integers (minus kKOffset), from the loaded bits.
vec4 kslice_quad(KSlice q, uint c) {
  uint bytes = (q.low[c % kLowBits] >> (kLowBits * (c / kLowBits))) & kLowMask;
#if defined(WEIGHT_KHIGH)
  bytes |= ((q.high[c % kHighBits] >> (kHighBits * (c / kHighBits))) & kHighMask) << kLowBits;
#endif
  return vec4(bytes & 0xffu, (bytes >> 8) & 0xffu, (bytes >> 16) & 0xffu, bytes >> 24) - kKOffset;
}

// What a row's slices share: their super-block's d (x) and dmin (y; 0 for Q3_K and Q6_K) and
// its packed scales (kScaleWords words), loaded once for its 8 slices.
struct KSuper {
  vec2 d;
  uvec4 scales;
};

KSuper load_ksuper(uint b, uint rows, uint cols) {
  KSuper k;
  const uint d_at = kd_start(rows, cols);
#if defined(WEIGHT_KMIN)
  k.d = unpackHalf2x16(weights.words[d_at + b]);
#else
  k.d = vec2(unpackHalf2x16(weights.words[d_at + (b >> 1)])[b & 1u], 0.0);
#endif
  const uint at = kscales_start(rows, cols) + b * kScaleWords;
#if defined(WEIGHT_Q2_K) || defined(WEIGHT_Q6_K)
  k.scales = weights4.words4[at / 4u];  // the planes before are whole 16-byte units
#else
  k.scales = uvec4(weights.words[at], weights.words[at + 1u], weights.words[at + 2u], 0u);
#endif
  return k;
}

// Word i of a vector by selects: a dynamic index would put the vector in memory (lavapipe).
uint word_of(uvec4 v, uint i) { return i < 2u ? (i == 0u ? v.x : v.y) : (i == 2u ? v.z : v.w); }

// Byte i of a super-block's packed scales.
uint scale_byte(KSuper k, uint i) { return (word_of(k.scales, i / 4u) >> (8u * (i % 4u))) & 0xffu; }

// The integer scale and min of slice s (0..7): of its first 16 elements in x, y, of its last
// 16 in z, w (Q4_K, Q5_K: one pair for all 32).
ivec4 slice_scale_mins(KSuper k, uint s) {
#if defined(WEIGHT_Q4_K) || defined(WEIGHT_Q5_K)
  // GGML's get_scale_min_k4: scales 0-3 and mins 0-3 are the low 6 bits of bytes 0-3 and
  // 4-7; scales and mins 4-7 take 4 bits from bytes 8-11 and their top 2 from bytes 0-7.
  uint scale, mn;
  if (s < 4u) {
    scale = scale_byte(k, s) & 63u;
    mn = scale_byte(k, s + 4u) & 63u;
  } else {
    scale = (scale_byte(k, s + 4u) & 0xfu) | ((scale_byte(k, s - 4u) >> 6) << 4);
    mn = (scale_byte(k, s + 4u) >> 4) | ((scale_byte(k, s) >> 6) << 4);
  }
  return ivec4(scale, mn, scale, mn);
#elif defined(WEIGHT_Q3_K)
  // Scale i (0..15): its low 4 bits in byte i % 8 (low nibble for i < 8, high for i >= 8),
  // its top 2 bits in byte 8 + i % 4 at bit 2 * (i / 4); stored plus 32.
  ivec2 scales;
  [[unroll]] for (uint h = 0u; h < 2u; ++h) {
    const uint i = 2u * s + h;
    const uint low4 = (scale_byte(k, i % 8u) >> (4u * (i / 8u))) & 0xfu;
    const uint high2 = (scale_byte(k, 8u + i % 4u) >> (2u * (i / 4u))) & 3u;
    scales[h] = int(low4 | (high2 << 4)) - 32;
  }
  return ivec4(scales.x, 0, scales.y, 0);
#elif defined(WEIGHT_Q6_K)
  const int word = int(word_of(k.scales, s / 2u));  // int8 scales, two per slice
  const int shift = 16 * int(s & 1u);
  return ivec4(bitfieldExtract(word, shift, 8), 0, bitfieldExtract(word, shift + 8, 8), 0);
#else  // Q2_K: byte i holds scale i in its low nibble, min i in its high one
  const uint word = word_of(k.scales, s / 2u) >> (16u * (s & 1u));
  return ivec4(word & 0xfu, (word >> 4) & 0xfu, (word >> 8) & 0xfu, (word >> 12) & 0xfu);
#endif
}

// What slice s multiplies its quants by and subtracts: d * scale (x) and dmin * min (y) for
// its first 16 elements, z and w for its last 16. Rounded as GGML rounds them.
vec4 slice_factors(KSuper k, uint s) {
  const vec4 sm = vec4(slice_scale_mins(k, s));
  return vec4(k.d.x * sm.x, k.d.y * sm.y, k.d.x * sm.z, k.d.y * sm.w);
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
#elif defined(WEIGHT_KQUANT)
  const uint e = k % 32u;
  const KSlice q = load_kslice(row * (cols / 32u) + k / 32u, rows, cols);
  const KSuper super_block = load_ksuper(row * (cols / 256u) + k / 256u, rows, cols);
  const vec4 f = slice_factors(super_block, (k / 32u) % 8u);
  const vec2 scale_min = e < 16u ? f.xy : f.zw;
  precise const float scaled = scale_min.x * kslice_quad(q, e / 4u)[e % 4u];
  return scaled - scale_min.y;  // rounded, then subtracted: GGML's d1 * q - m1
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
