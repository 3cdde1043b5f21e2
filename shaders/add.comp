#version 450
// x += y for two strided matrix views (the residual stream).
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Y { float y[]; };

layout(push_constant) uniform Push {
  uint rows;
  uint cols;
  uint x_offset;
  uint x_stride;
  uint y_offset;
  uint y_stride;
} p;

void main() {
  const uint c = gl_GlobalInvocationID.x;
  const uint r = gl_GlobalInvocationID.y;
  if (c >= p.cols || r >= p.rows) return;
  x[p.x_offset + r * p.x_stride + c] += y[p.y_offset + r * p.y_stride + c];
}
