#version 450
// Matrix-vector product for decode. One invocation computes kRows weight rows for a pass of
// kTokensPerPass tokens (1, 2, 4 or 8; both are specialization constants, so each variant's
// loops unroll exactly); more tokens loop in passes over the same rows, still in cache. Every
// weight byte is read once per pass: decode is bandwidth bound, so what matters is reading
// the weights once, in their small type, with wide loads. CPU devices (lavapipe), where the
// tiled kernel's barriers and shared memory are emulated, use this kernel for prefill too.
// Requires x's offset and row stride to be multiples of 4 (the host copies x otherwise).
#include "include/common.glsl"

layout(constant_id = 0) const uint kTokensPerPass = 1u;
const uint kMaxTokensPerPass = 8u;
// Weight rows per invocation: 4, or 8 for prefill passes (each x load serves all of them).
layout(constant_id = 1) const uint kRows = 4u;
const uint kMaxRows = 8u;
layout(local_size_x = 16) in;
#include "include/matmul_push.glsl"
#include "include/weights.glsl"

float acc[kMaxRows][kMaxTokensPerPass];

uint x_base4[kMaxTokensPerPass];  // x row of each token of the pass, in vec4 units

#if defined(WEIGHT_KQUANT)
uint slice4;  // the current 32-column slice, in vec4 units
vec4 slice_x(uint t, uint c) { return x4[x_base4[t] + slice4 + c]; }
#define KSLICE_TOKENS kTokensPerPass
#define KSLICE_MAX_TOKENS kMaxTokensPerPass
#include "include/kquant_matmul.glsl"
#endif

void main() {
  const uint row0 = (linear_workgroup() * 16u + gl_LocalInvocationID.x) * kRows;
  if (row0 >= p.rows) return;
  uint rows[kMaxRows];  // rows past the end repeat the last one; their results are not written
  [[unroll]] for (uint i = 0u; i < kRows; ++i) rows[i] = min(row0 + i, p.rows - 1u);

  for (uint t0 = 0u; t0 < p.n; t0 += kTokensPerPass) {
    [[unroll]] for (uint t = 0u; t < kTokensPerPass; ++t) {
      // Tokens past the end repeat the last one (no divergent branches around loads).
      x_base4[t] = (p.x_offset + min(t0 + t, p.n - 1u) * p.x_stride) / 4u;
      [[unroll]] for (uint i = 0u; i < kRows; ++i) acc[i][t] = 0.0;
    }

#if defined(WEIGHT_PLAIN)
    const uint cols4 = p.cols / 4u;
    const uint row_stride4 = padded_cols(p.cols) / 4u;
    // Four vec4 columns per iteration: fewer loop turns per load (loops are costly on CPU
    // implementations), then the remaining vec4 columns one at a time.
    uint k4 = 0u;
    for (; k4 + 4u <= cols4; k4 += 4u) {
      [[unroll]] for (uint u = 0u; u < 4u; ++u) {
        vec4 w[kMaxRows];
        [[unroll]] for (uint i = 0u; i < kRows; ++i) w[i] = load_weights4(rows[i] * row_stride4 + k4 + u);
        [[unroll]] for (uint t = 0u; t < kTokensPerPass; ++t) {
          const vec4 xv = x4[x_base4[t] + k4 + u];
          [[unroll]] for (uint i = 0u; i < kRows; ++i) acc[i][t] += dot(w[i], xv);
        }
      }
    }
    for (; k4 < cols4; ++k4) {
      vec4 w[kMaxRows];
      [[unroll]] for (uint i = 0u; i < kRows; ++i) w[i] = load_weights4(rows[i] * row_stride4 + k4);
      [[unroll]] for (uint t = 0u; t < kTokensPerPass; ++t) {
        const vec4 xv = x4[x_base4[t] + k4];
        [[unroll]] for (uint i = 0u; i < kRows; ++i) acc[i][t] += dot(w[i], xv);
      }
    }
    for (uint k = cols4 * 4u; k < p.cols; ++k) {  // the last cols % 4 columns
      [[unroll]] for (uint i = 0u; i < kRows; ++i) {
        const float w = weight_at(rows[i], k, p.rows, p.cols);
        [[unroll]] for (uint t = 0u; t < kTokensPerPass; ++t) {
          acc[i][t] += w * x[x_base4[t] * 4u + k];
        }
      }
    }
#elif defined(WEIGHT_KQUANT)
    for (uint b = 0u; b < p.cols / 256u; ++b) {
      KSuper supers[kMaxRows];
      [[unroll]] for (uint i = 0u; i < kRows; ++i) {
        supers[i] = load_ksuper(rows[i] * (p.cols / 256u) + b, p.rows, p.cols);
      }
      for (uint slice = 8u * b; slice < 8u * b + 8u; ++slice) {
        slice4 = slice * 8u;
        multiply_kslice(rows, supers, slice);
      }
    }
#else
    const uint blocks = p.cols / 32u;
    for (uint blk = 0u; blk < blocks; ++blk) {
      float scale[kMaxRows];
      float minimum[kMaxRows];  // Q4_1 / Q5_1: m, times the block's sum of x
      uint high[kMaxRows];      // Q5_0 / Q5_1: the fifth bits
      uvec4 quants[kMaxRows][kQuantWordsPerBlock / 4u];
      [[unroll]] for (uint i = 0u; i < kRows; ++i) {
        const uint block = rows[i] * blocks + blk;
#if defined(WEIGHT_MIN)
        const vec2 dm = block_scale_min(block, p.rows, p.cols);
        scale[i] = dm.x;
        minimum[i] = dm.y;
#else
        scale[i] = block_scale(block, p.rows, p.cols);
        minimum[i] = 0.0;
#endif
#if defined(WEIGHT_HIGH_BITS)
        high[i] = block_high_bits(block, p.rows, p.cols);
#else
        high[i] = 0u;
#endif
        [[unroll]] for (uint u = 0u; u < kQuantWordsPerBlock / 4u; ++u) {
          quants[i][u] = weights4.words4[block * (kQuantWordsPerBlock / 4u) + u];
        }
      }
      float sums[kMaxRows][kMaxTokensPerPass];
      float x_sums[kMaxTokensPerPass];
      [[unroll]] for (uint t = 0u; t < kTokensPerPass; ++t) x_sums[t] = 0.0;
      [[unroll]] for (uint i = 0u; i < kRows; ++i) {
        [[unroll]] for (uint t = 0u; t < kTokensPerPass; ++t) sums[i][t] = 0.0;
      }
#if defined(WEIGHT_Q8_0)
      // Word c of the block holds elements 4c .. 4c+3 (signed bytes).
      [[unroll]] for (uint c = 0u; c < 8u; ++c) {
        vec4 q[kMaxRows];
        [[unroll]] for (uint i = 0u; i < kRows; ++i) {
          const int word = int(quants[i][c / 4u][c % 4u]);
          q[i] = vec4(bitfieldExtract(word, 0, 8), bitfieldExtract(word, 8, 8),
                      bitfieldExtract(word, 16, 8), bitfieldExtract(word, 24, 8));
        }
        [[unroll]] for (uint t = 0u; t < kTokensPerPass; ++t) {
          const vec4 xv = x4[x_base4[t] + blk * 8u + c];
          [[unroll]] for (uint i = 0u; i < kRows; ++i) sums[i][t] += dot(q[i], xv);
        }
      }
#else
      // Word c holds elements 4c .. 4c+3 in its low nibbles and 16+4c .. 16+4c+3 in its high.
      [[unroll]] for (uint c = 0u; c < 4u; ++c) {
        vec4 lo[kMaxRows], hi[kMaxRows];
        [[unroll]] for (uint i = 0u; i < kRows; ++i) nibble_quads(quants[i][0][c], high[i], c, lo[i], hi[i]);
        [[unroll]] for (uint t = 0u; t < kTokensPerPass; ++t) {
          const vec4 x_lo = x4[x_base4[t] + blk * 8u + c];
          const vec4 x_hi = x4[x_base4[t] + blk * 8u + 4u + c];
#if defined(WEIGHT_MIN)
          x_sums[t] += dot(x_lo, vec4(1.0)) + dot(x_hi, vec4(1.0));
#endif
          [[unroll]] for (uint i = 0u; i < kRows; ++i) sums[i][t] += dot(lo[i], x_lo) + dot(hi[i], x_hi);
        }
      }
#endif
      [[unroll]] for (uint i = 0u; i < kRows; ++i) {
        [[unroll]] for (uint t = 0u; t < kTokensPerPass; ++t) {
          acc[i][t] += scale[i] * sums[i][t] + minimum[i] * x_sums[t];
        }
      }
    }
#endif

    [[unroll]] for (uint i = 0u; i < kRows; ++i) {
      const uint row = row0 + i;
      const float b = p.has_bias != 0u ? bias[p.bias_offset + rows[i]] : 0.0;
      [[unroll]] for (uint t = 0u; t < kTokensPerPass; ++t) {
        if (row < p.rows && t0 + t < p.n) {
          out_data[p.out_offset + (t0 + t) * p.out_stride + row] = acc[i][t] + b;
        }
      }
    }
  }
}
