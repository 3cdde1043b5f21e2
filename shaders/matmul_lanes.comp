#version 450
// Matrix products for CPU devices (lavapipe): prefill, and decode (1-8 tokens, where x is
// shared by every lane and its loads would otherwise cost as much as the weights'). Each
// invocation computes a register tile of kRows weight rows x kTokens tokens: every weight it
// loads serves kTokens tokens and every x value kRows rows. No shared memory and no barriers,
// which lavapipe emulates slowly. Adjacent invocations (SIMD lanes there) own adjacent rows and run the same
// instructions.
//
// Why subgroups: lavapipe runs a storage-buffer load inside a loop as one scalar load per lane
// and component, so a load that every lane makes at the same address (x: all lanes share the
// tokens) costs as much as eight different ones. Here each of a subgroup's 8 lanes loads a
// different vec4 of the 32-column slice of x, and subgroupShuffle hands it to the others
// (a register shuffle: the lane index is a constant once the loops are unrolled). Needs a
// subgroup of at least 8 lanes with shuffle operations (the host checks). Each 32-column
// slice is one block of a block type, dequantised once per row and reused for all kTokens tokens.
//
// Workgroups of 64 (F32, F16) or 32 (block types) invocations for prefill, 16 for decode
// (specialization constant 2; a multiple of the 8 lanes that share a slice): x over token
// tiles, y over row groups (size * kRows rows), so that consecutive workgroups read the same
// weight rows while they are in cache.
// Requires x's offset and row stride to be multiples of 4 (the host copies x otherwise).
#include "include/common.glsl"
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable

layout(constant_id = 0) const uint kRows = 4u;
layout(constant_id = 1) const uint kTokens = 8u;
const uint kMaxRows = 8u;
const uint kMaxTokens = 32u;
const uint kLanes = 8u;       // lanes sharing one 32-column slice of x
const uint kSliceCols = 32u;  // kLanes x vec4
layout(local_size_x_id = 2, local_size_x = 64) in;
#include "include/matmul_push.glsl"
#include "include/weights.glsl"

float acc[kMaxRows][kMaxTokens];
uint rows[kMaxRows];       // rows past the end repeat the last one; their results are not written
uint x_base4[kMaxTokens];  // x row of each token, in vec4 units
vec4 x_slice[kMaxTokens];  // this lane's vec4 of the current 32-column slice, per token

// Loads this lane's part of columns [k0, k0 + 32) of every token's x.
void load_x_slice(uint k0) {
  const uint lane4 = k0 / 4u + gl_SubgroupInvocationID % kLanes;
  [[unroll]] for (uint t = 0u; t < kTokens; ++t) x_slice[t] = x4[x_base4[t] + lane4];
}

// Columns 4j .. 4j+3 of the slice for token t, from the lane that loaded them.
vec4 x_part(uint t, uint j) { return subgroupShuffle(x_slice[t], j); }

#if defined(WEIGHT_KQUANT)
vec4 slice_x(uint t, uint c) { return x_part(t, c); }
#define KSLICE_TOKENS kTokens
#define KSLICE_MAX_TOKENS kMaxTokens
#include "include/kquant_matmul.glsl"
// A whole super-block (8 slices) of each row, its header loaded once.
void multiply_super_block(uint b) {
  KSuper supers[kMaxRows];
  [[unroll]] for (uint i = 0u; i < kRows; ++i) {
    supers[i] = load_ksuper(rows[i] * (p.cols / 256u) + b, p.rows, p.cols);
  }
  for (uint s = 0u; s < 8u; ++s) {
    load_x_slice((8u * b + s) * kSliceCols);
    multiply_kslice(rows, supers, 8u * b + s);
  }
}
#elif defined(WEIGHT_PLAIN)
void multiply_slice(uint k0) {
  const uint row_stride4 = padded_cols(p.cols) / 4u;
  [[unroll]] for (uint j = 0u; j < kLanes; ++j) {
    vec4 w[kMaxRows];
    [[unroll]] for (uint i = 0u; i < kRows; ++i) w[i] = load_weights4(rows[i] * row_stride4 + k0 / 4u + j);
    [[unroll]] for (uint t = 0u; t < kTokens; ++t) {
      const vec4 xv = x_part(t, j);
      [[unroll]] for (uint i = 0u; i < kRows; ++i) acc[i][t] += dot(w[i], xv);
    }
  }
}
#else
// One block (32 columns) of each row, dequantised once and applied to all tokens.
void multiply_slice(uint k0) {
  const uint blocks = p.cols / 32u;
  float scale[kMaxRows];
  float minimum[kMaxRows];  // Q4_1 / Q5_1: m, times the block's sum of x
  uint high[kMaxRows];      // Q5_0 / Q5_1: the fifth bits
  uvec4 quants[kMaxRows][kQuantWordsPerBlock / 4u];
  [[unroll]] for (uint i = 0u; i < kRows; ++i) {
    const uint block = rows[i] * blocks + k0 / 32u;
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
  float sums[kMaxRows][kMaxTokens];
  float x_sums[kMaxTokens];
  [[unroll]] for (uint t = 0u; t < kTokens; ++t) x_sums[t] = 0.0;
  [[unroll]] for (uint i = 0u; i < kRows; ++i) {
    [[unroll]] for (uint t = 0u; t < kTokens; ++t) sums[i][t] = 0.0;
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
    [[unroll]] for (uint t = 0u; t < kTokens; ++t) {
      const vec4 xv = x_part(t, c);
      [[unroll]] for (uint i = 0u; i < kRows; ++i) sums[i][t] += dot(q[i], xv);
    }
  }
#else
  // Word c holds elements 4c .. 4c+3 in its low nibbles and 16+4c .. 16+4c+3 in its high.
  [[unroll]] for (uint c = 0u; c < 4u; ++c) {
    vec4 lo[kMaxRows], hi[kMaxRows];
    [[unroll]] for (uint i = 0u; i < kRows; ++i) nibble_quads(quants[i][0][c], high[i], c, lo[i], hi[i]);
    [[unroll]] for (uint t = 0u; t < kTokens; ++t) {
      const vec4 x_lo = x_part(t, c);
      const vec4 x_hi = x_part(t, 4u + c);
#if defined(WEIGHT_MIN)
      x_sums[t] += dot(x_lo, vec4(1.0)) + dot(x_hi, vec4(1.0));
#endif
      [[unroll]] for (uint i = 0u; i < kRows; ++i) sums[i][t] += dot(lo[i], x_lo) + dot(hi[i], x_hi);
    }
  }
#endif
  [[unroll]] for (uint i = 0u; i < kRows; ++i) {
    [[unroll]] for (uint t = 0u; t < kTokens; ++t) {
      acc[i][t] += scale[i] * sums[i][t] + minimum[i] * x_sums[t];
    }
  }
}
#endif

// The last cols % 32 columns (F32 and F16 only: quantised rows are whole blocks), each lane
// loading x itself.
void multiply_tail(uint k_first) {
  for (uint k = k_first; k < p.cols; ++k) {
    [[unroll]] for (uint i = 0u; i < kRows; ++i) {
      const float w = weight_at(rows[i], k, p.rows, p.cols);
      [[unroll]] for (uint t = 0u; t < kTokens; ++t) acc[i][t] += w * x[x_base4[t] * 4u + k];
    }
  }
}

void main() {
  if (p.n == 0u || p.rows == 0u) return;  // the same for every lane
  // No other early return: every lane of a subgroup must take part in the shuffles.
  const uint row0 = (gl_WorkGroupID.y * gl_WorkGroupSize.x + gl_LocalInvocationID.x) * kRows;
  const uint token0 = gl_WorkGroupID.x * kTokens;
  [[unroll]] for (uint i = 0u; i < kRows; ++i) rows[i] = min(row0 + i, p.rows - 1u);
  [[unroll]] for (uint t = 0u; t < kTokens; ++t) {
    x_base4[t] = (p.x_offset + min(token0 + t, p.n - 1u) * p.x_stride) / 4u;
    [[unroll]] for (uint i = 0u; i < kRows; ++i) acc[i][t] = 0.0;
  }

#if defined(WEIGHT_KQUANT)
  for (uint b = 0u; b < p.cols / 256u; ++b) multiply_super_block(b);
#else
  const uint whole_slices_end = p.cols / kSliceCols * kSliceCols;
  for (uint k0 = 0u; k0 < whole_slices_end; k0 += kSliceCols) {
    load_x_slice(k0);
    multiply_slice(k0);
  }
  multiply_tail(whole_slices_end);
#endif

  [[unroll]] for (uint i = 0u; i < kRows; ++i) {
    const uint row = row0 + i;
    const float b = p.has_bias != 0u ? bias[p.bias_offset + rows[i]] : 0.0;
    [[unroll]] for (uint t = 0u; t < kTokens; ++t) {
      if (row < p.rows && token0 + t < p.n) {
        out_data[p.out_offset + (token0 + t) * p.out_stride + row] = acc[i][t] + b;
      }
    }
  }
}
