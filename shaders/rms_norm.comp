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

#if defined(VEC4)
// Compiled with VEC4 too (rms_norm_lanes_vec4, add_rms_norm_lanes_vec4): 16-byte loads and
// stores, a quarter of the accesses lavapipe runs lane by lane (every offset, stride and cols a
// multiple of 4; the host checks).
#if defined(ADD_RESIDUAL)
layout(std430, binding = 0) buffer X4 { vec4 x4[]; };
layout(std430, binding = 3) readonly buffer Y4 { vec4 y4[]; };
#else
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
#endif
layout(std430, binding = 1) readonly buffer W4 { vec4 w4[]; };
layout(std430, binding = 2) writeonly buffer Out4 { vec4 out4[]; };

void normalize_row(uint row) {
  const uint tensor_row = row / p.groups;
  const uint group_first = (row % p.groups) * p.cols;
  const uint in4 = (p.x_offset + tensor_row * p.x_stride + group_first) / 4u;
  const uint cols4 = p.cols / 4u;
  vec4 sum4 = vec4(0.0);
  for (uint c = gl_LocalInvocationID.x; c < cols4; c += gl_WorkGroupSize.x) {
#if defined(ADD_RESIDUAL)
    const vec4 v = x4[in4 + c] + y4[(p.y_offset + tensor_row * p.y_stride + group_first) / 4u + c];
    x4[in4 + c] = v;  // read back below by this same invocation
#else
    const vec4 v = x4[in4 + c];
#endif
    sum4 += v * v;
  }
  const float scale = inversesqrt(workgroup_sum(dot(sum4, vec4(1.0))) / float(p.cols) + p.eps);
  const uint out4_base = (p.out_offset + tensor_row * p.out_stride + group_first) / 4u;
  for (uint c = gl_LocalInvocationID.x; c < cols4; c += gl_WorkGroupSize.x) {
    out4[out4_base + c] = x4[in4 + c] * scale * w4[p.w_offset / 4u + c];
  }
}
#else
void normalize_row(uint row) {
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
#endif

void main() {
#if defined(LANES)
  // Workgroup x walks norms x, x + groups, ...: a CPU device gets fewer groups than norms (each
  // costs lavapipe more than its 8 lanes' work).
  const uint groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
  for (uint row = linear_workgroup(); row < p.rows; row += groups) normalize_row(row);
#else
  const uint row = linear_workgroup();
  if (row < p.rows) normalize_row(row);
#endif
}
