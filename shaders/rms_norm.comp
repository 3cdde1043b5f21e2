#version 450
// out = x / sqrt(mean(x^2) + eps) * weight, one workgroup per row. With groups > 1 (gemma3's
// per-head norms) each row of the tensor is that many rows of `cols` side by side.
// Compiled with ADD_RESIDUAL as add_rms_norm: first x += y (the residual add that ends the
// previous block), then the norm of the sum, in one dispatch instead of two.
// Compiled with LANES (rms_norm_lanes, add_rms_norm_lanes) for CPU devices: a workgroup is 8
// lanes of one subgroup, summed with shuffles, because lavapipe emulates the barriers and shared
// memory of the 64-invocation tree (0.5 ms for 128 rows of 256; needs subgroups of >= 8 lanes
// that shuffle, as matmul_lanes does).
#include "include/common.glsl"

#if defined(LANES)
#extension GL_KHR_shader_subgroup_shuffle : enable
layout(local_size_x = 8) in;
#else
layout(local_size_x = 64) in;
#endif
#if defined(ADD_RESIDUAL)
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 3) readonly buffer Y { float y[]; };
#else
layout(std430, binding = 0) readonly buffer X { float x[]; };
#endif
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) writeonly buffer Out { float out_data[]; };

layout(push_constant) uniform Push {
  uint rows;
  uint cols;
  uint x_offset;
  uint x_stride;
  uint w_offset;
  uint out_offset;
  uint out_stride;
  float eps;
  uint y_offset;  // ADD_RESIDUAL only
  uint y_stride;
  uint groups;  // norms per tensor row
} p;

#if defined(LANES)
float workgroup_sum(float value) {
  [[unroll]] for (uint distance = 1u; distance < 8u; distance *= 2u) {
    value += subgroupShuffleXor(value, distance);
  }
  return value;
}
#else
shared float partial[64];

float workgroup_sum(float value) {
  partial[gl_LocalInvocationID.x] = value;
  barrier();
  [[unroll]] for (uint width = 32u; width > 0u; width >>= 1) {
    if (gl_LocalInvocationID.x < width) {
      partial[gl_LocalInvocationID.x] += partial[gl_LocalInvocationID.x + width];
    }
    barrier();
  }
  const float total = partial[0];
  barrier();
  return total;
}
#endif

void main() {
  const uint row = linear_workgroup();
  if (row >= p.rows) return;
  const uint tensor_row = row / p.groups;
  const uint group_first = (row % p.groups) * p.cols;
  const uint in_base = p.x_offset + tensor_row * p.x_stride + group_first;
  float sum_sq = 0.0;
  for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x) {
#if defined(ADD_RESIDUAL)
    const float v = x[in_base + c] + y[p.y_offset + tensor_row * p.y_stride + group_first + c];
    x[in_base + c] = v;  // read back below by this same invocation
#else
    const float v = x[in_base + c];
#endif
    sum_sq += v * v;
  }
  const float scale = inversesqrt(workgroup_sum(sum_sq) / float(p.cols) + p.eps);
  const uint out_base = p.out_offset + tensor_row * p.out_stride + group_first;
  for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x) {
    out_data[out_base + c] = x[in_base + c] * scale * w[p.w_offset + c];
  }
}
