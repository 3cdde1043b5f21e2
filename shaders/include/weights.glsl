// Reading weights in GGML's byte layouts from a buffer of 32-bit words. The includer declares
//   layout(std430, binding = N) readonly buffer Weights { uint words[]; } weights;
// and defines exactly one of WEIGHT_F32, WEIGHT_F16, WEIGHT_Q8_0, WEIGHT_Q4_0.
// Plain word reads with manual unpacking work on every device (no 8/16-bit storage needed);
// GGML blocks are 34 (Q8_0) or 18 (Q4_0) bytes, so they start on even, not word, boundaries.

// The 16 bits at an even byte offset.
uint read_u16(uint byte_offset) {
  const uint word = weights.words[byte_offset >> 2];
  return (byte_offset & 2u) != 0u ? (word >> 16) : (word & 0xffffu);
}

// The 32 bits at an even byte offset (may straddle two words).
uint read_u32_even(uint byte_offset) {
  const uint index = byte_offset >> 2;
  if ((byte_offset & 2u) == 0u) return weights.words[index];
  return (weights.words[index] >> 16) | (weights.words[index + 1u] << 16);
}

float read_half(uint byte_offset) {
  return unpackHalf2x16(read_u16(byte_offset)).x;
}

uint read_byte(uint byte_offset) {
  return (weights.words[byte_offset >> 2] >> ((byte_offset & 3u) * 8u)) & 0xffu;
}

#if defined(WEIGHT_Q8_0)
const uint kBlockBytes = 34u;
#elif defined(WEIGHT_Q4_0)
const uint kBlockBytes = 18u;
#endif

// Element (row, k) of a [rows x cols] matrix, dequantised.
float weight_at(uint row, uint k, uint cols) {
#if defined(WEIGHT_F32)
  return uintBitsToFloat(weights.words[row * cols + k]);
#elif defined(WEIGHT_F16)
  return read_half((row * cols + k) * 2u);
#else
  const uint block_start = (row * (cols / 32u) + k / 32u) * kBlockBytes;
  const float d = read_half(block_start);
  const uint j = k % 32u;
#if defined(WEIGHT_Q8_0)
  const int q = int(read_byte(block_start + 2u + j) << 24) >> 24;  // sign-extend int8
  return d * float(q);
#else
  const uint packed = read_byte(block_start + 2u + (j & 15u));
  const uint q = j < 16u ? (packed & 0xfu) : (packed >> 4);
  return d * (float(q) - 8.0);
#endif
#endif
}
