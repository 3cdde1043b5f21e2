// Reading weights in the backend's device layout (written by VulkanBackend::upload_matrix from
// GGML's bytes, see weight_layout.h). The includer defines exactly one of WEIGHT_F32,
// WEIGHT_F16, WEIGHT_Q8_0, WEIGHT_Q4_0 and binds the weights at binding 0.
//   F32, F16     rows padded to a multiple of 4 elements, so a row starts 16 (8) bytes aligned
//                and 4 elements load as one uvec4 (uvec2).
//   Q8_0, Q4_0   the quants of all blocks first (32 or 16 bytes per block, row-major block
//                order), then all blocks' fp16 scales: GGML's 34- and 18-byte blocks start on
//                2-byte boundaries, the split layout loads a block's quants as 16-byte units.
// Only 32-bit loads: no 8/16-bit storage feature needed. Fewer, wider loads matter on every
// device, and most on lavapipe, where each load instruction loops over the SIMD lanes.
layout(std430, binding = 0) readonly buffer Weights { uint words[]; } weights;
layout(std430, binding = 0) readonly buffer Weights2 { uvec2 words2[]; } weights2;
layout(std430, binding = 0) readonly buffer Weights4 { uvec4 words4[]; } weights4;

uint padded_cols(uint cols) { return (cols + 3u) & ~3u; }

#if defined(WEIGHT_Q8_0)
const uint kQuantWordsPerBlock = 8u;
#elif defined(WEIGHT_Q4_0)
const uint kQuantWordsPerBlock = 4u;
#endif

#if defined(WEIGHT_Q8_0) || defined(WEIGHT_Q4_0)
// Scale of block `block` (row-major over the chunk's rows x cols/32 blocks).
float block_scale(uint block, uint rows, uint cols) {
  const uint scales_start = rows * (cols / 32u) * kQuantWordsPerBlock;
  return unpackHalf2x16(weights.words[scales_start + (block >> 1)])[block & 1u];
}
#endif

// Element (row, k) of the chunk's [rows x cols] matrix, dequantised.
float weight_at(uint row, uint k, uint rows, uint cols) {
#if defined(WEIGHT_F32)
  return uintBitsToFloat(weights.words[row * padded_cols(cols) + k]);
#elif defined(WEIGHT_F16)
  const uint e = row * padded_cols(cols) + k;
  return unpackHalf2x16(weights.words[e >> 1])[e & 1u];
#else
  const uint block = row * (cols / 32u) + k / 32u;
  const uint j = k % 32u;
#if defined(WEIGHT_Q8_0)
  const uint word = weights.words[block * kQuantWordsPerBlock + j / 4u];
  return block_scale(block, rows, cols) * float(bitfieldExtract(int(word), int(8u * (j % 4u)), 8));
#else
  const uint word = weights.words[block * kQuantWordsPerBlock + (j & 15u) / 4u];
  const uint byte_value = (word >> (8u * (j % 4u))) & 0xffu;
  const uint q = j < 16u ? (byte_value & 0xfu) : (byte_value >> 4);
  return block_scale(block, rows, cols) * (float(q) - 8.0);
#endif
#endif
}
