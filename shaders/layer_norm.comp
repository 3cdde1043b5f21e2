#version 450
// out = (x - mean) / sqrt(var + eps) * weight + bias (biased variance), one workgroup per row.
// Two passes over the row (mean, then squared deviations) for accuracy.
// Compiled with ADD_RESIDUAL as add_layer_norm: first x += y (the residual add that ends the
// previous block), then the norm of the sum, in one dispatch instead of two.
#include "include/common.glsl"

layout(local_size_x = 64) in;
#if defined(ADD_RESIDUAL)
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 4) readonly buffer Y { float y[]; };
#else
layout(std430, binding = 0) readonly buffer X { float x[]; };
#endif
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) readonly buffer B { float b[]; };
layout(std430, binding = 3) writeonly buffer Out { float out_data[]; };

layout(push_constant) uniform Push {
  uint rows;
  uint cols;
  uint x_offset;
  uint x_stride;
  uint w_offset;
  uint b_offset;
  uint out_offset;
  uint out_stride;
  float eps;
  uint y_offset;  // ADD_RESIDUAL only
  uint y_stride;
} p;

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

void main() {
  const uint row = linear_workgroup();
  if (row >= p.rows) return;
  const uint in_base = p.x_offset + row * p.x_stride;
  float sum = 0.0;
  for (uint c = gl_LocalInvocationID.x; c < p.cols; c += 64u) {
#if defined(ADD_RESIDUAL)
    const float v = x[in_base + c] + y[p.y_offset + row * p.y_stride + c];
    x[in_base + c] = v;  // read back below by this same invocation
#else
    const float v = x[in_base + c];
#endif
    sum += v;
  }
  const float mean = workgroup_sum(sum) / float(p.cols);
  float sum_dev = 0.0;
  for (uint c = gl_LocalInvocationID.x; c < p.cols; c += 64u) {
    const float d = x[in_base + c] - mean;
    sum_dev += d * d;
  }
  const float inv_std = inversesqrt(workgroup_sum(sum_dev) / float(p.cols) + p.eps);
  const uint out_base = p.out_offset + row * p.out_stride;
  for (uint c = gl_LocalInvocationID.x; c < p.cols; c += 64u) {
    out_data[out_base + c] = (x[in_base + c] - mean) * inv_std * w[p.w_offset + c] + b[p.b_offset + c];
  }
}
