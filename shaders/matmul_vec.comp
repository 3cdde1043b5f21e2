#version 450
// Matrix-vector product for decode: one invocation per weight row walks the whole row and
// serves up to 8 tokens at once, so each weight byte is read once per step. Decode is
// bandwidth bound: what matters is reading the weights once, in their small type.
// More tokens loop in passes of 8 over the same row (still in cache): CPU devices such as
// lavapipe, where the tiled kernel's barriers and shared memory are emulated, use this kernel
// for prefill too.
#include "include/common.glsl"

const uint kTokensPerPass = 8u;
layout(local_size_x = 64) in;
#include "include/matmul_push.glsl"
#include "include/weights.glsl"

void main() {
  const uint row = linear_workgroup() * 64u + gl_LocalInvocationID.x;
  if (row >= p.rows) return;
  const float b = p.has_bias != 0u ? bias[p.bias_offset + row] : 0.0;

  for (uint t0 = 0u; t0 < p.n; t0 += kTokensPerPass) {
    const uint count = min(kTokensPerPass, p.n - t0);
    const uint x_base = p.x_offset + t0 * p.x_stride;
    float acc[kTokensPerPass];
    [[unroll]] for (uint t = 0u; t < kTokensPerPass; ++t) acc[t] = 0.0;

#if defined(WEIGHT_F32) || defined(WEIGHT_F16)
    for (uint k = 0u; k < p.cols; ++k) {
      const float w = weight_at(row, k, p.cols);
      [[unroll]] for (uint t = 0u; t < kTokensPerPass; ++t) {
        if (t < count) acc[t] += w * x[x_base + t * p.x_stride + k];
      }
    }
#else
    const uint blocks = p.cols / 32u;
    for (uint blk = 0u; blk < blocks; ++blk) {
      const uint start = (row * blocks + blk) * kBlockBytes;
      const float d = read_half(start);
      const uint k0 = blk * 32u;
      float sums[kTokensPerPass];
      [[unroll]] for (uint t = 0u; t < kTokensPerPass; ++t) sums[t] = 0.0;
#if defined(WEIGHT_Q8_0)
      [[unroll]] for (uint word = 0u; word < 8u; ++word) {
        const int packed = int(read_u32_even(start + 2u + 4u * word));
        [[unroll]] for (uint b = 0u; b < 4u; ++b) {
          const float q = float(bitfieldExtract(packed, int(8u * b), 8));
          const uint k = k0 + 4u * word + b;
          [[unroll]] for (uint t = 0u; t < kTokensPerPass; ++t) {
            if (t < count) sums[t] += q * x[x_base + t * p.x_stride + k];
          }
        }
      }
#else  // Q4_0: byte j holds element j (low nibble) and element j + 16 (high nibble)
      [[unroll]] for (uint word = 0u; word < 4u; ++word) {
        const uint packed = read_u32_even(start + 2u + 4u * word);
        [[unroll]] for (uint b = 0u; b < 4u; ++b) {
          const uint byte_value = (packed >> (8u * b)) & 0xffu;
          const float lo = float(byte_value & 0xfu) - 8.0;
          const float hi = float(byte_value >> 4) - 8.0;
          const uint k = k0 + 4u * word + b;
          [[unroll]] for (uint t = 0u; t < kTokensPerPass; ++t) {
            if (t < count) {
              const uint at = x_base + t * p.x_stride + k;
              sums[t] += lo * x[at] + hi * x[at + 16u];
            }
          }
        }
      }
#endif
      [[unroll]] for (uint t = 0u; t < kTokensPerPass; ++t) acc[t] += d * sums[t];
    }
#endif

    [[unroll]] for (uint t = 0u; t < kTokensPerPass; ++t) {
      if (t < count) out_data[p.out_offset + (t0 + t) * p.out_stride + row] = acc[t] + b;
    }
  }
}
