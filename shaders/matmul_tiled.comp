#version 450
// Matrix-matrix product for prefill: a 16x16 workgroup computes a 32-token x 32-row tile of
// out, staging 32-wide slices of x and of the (dequantised) weights in shared memory so that
// each loaded weight serves 32 tokens. Many tokens per weight byte: this moves toward compute
// bound, which is why prefill is faster per token than decode.
#include "include/common.glsl"

const uint kTile = 32u;
layout(local_size_x = 16, local_size_y = 16) in;
#include "include/matmul_push.glsl"
#include "include/weights.glsl"

shared float x_tile[kTile][kTile + 1u];  // [token][k], padded against bank conflicts
shared float w_tile[kTile][kTile + 1u];  // [weight row][k]

void main() {
  const uint row0 = gl_WorkGroupID.x * kTile;
  const uint token0 = gl_WorkGroupID.y * kTile;
  const uint tx = gl_LocalInvocationID.x;  // output rows tx and tx + 16
  const uint ty = gl_LocalInvocationID.y;  // tokens ty and ty + 16
  const uint flat_id = ty * 16u + tx;
  float acc[2][2] = float[2][2](float[2](0.0, 0.0), float[2](0.0, 0.0));

  for (uint k0 = 0u; k0 < p.cols; k0 += kTile) {
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      const uint e = flat_id + 256u * i;
      const uint r = e / kTile;
      const uint c = e % kTile;
      const uint k = k0 + c;
      const uint token = token0 + r;
      x_tile[r][c] = (token < p.n && k < p.cols) ? x[p.x_offset + token * p.x_stride + k] : 0.0;
      const uint wrow = row0 + r;
      w_tile[r][c] = (wrow < p.rows && k < p.cols) ? weight_at(wrow, k, p.rows, p.cols) : 0.0;
    }
    barrier();
    [[unroll]] for (uint c = 0u; c < kTile; ++c) {
      const float x0 = x_tile[ty][c];
      const float x1 = x_tile[ty + 16u][c];
      const float w0 = w_tile[tx][c];
      const float w1 = w_tile[tx + 16u][c];
      acc[0][0] += x0 * w0;
      acc[0][1] += x0 * w1;
      acc[1][0] += x1 * w0;
      acc[1][1] += x1 * w1;
    }
    barrier();
  }

  [[unroll]] for (uint i = 0u; i < 2u; ++i) {
    const uint token = token0 + ty + 16u * i;
    [[unroll]] for (uint j = 0u; j < 2u; ++j) {
      const uint row = row0 + tx + 16u * j;
      if (token < p.n && row < p.rows) {
        const float b = p.has_bias != 0u ? bias[p.bias_offset + row] : 0.0;
        out_data[p.out_offset + token * p.out_stride + row] = acc[i][j] + b;
      }
    }
  }
}
