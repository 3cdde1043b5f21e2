#version 450
// GELU, tanh form, in place. tanh is written out with a clamped argument: a driver's tanh
// built from exp can return NaN for large inputs, and tanh(10) is 1 in float anyway.
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer X { float x[]; };

layout(push_constant) uniform Push {
  uint rows;
  uint cols;
  uint x_offset;
  uint x_stride;
} p;

void main() {
  const uint c = gl_GlobalInvocationID.x;
  const uint r = gl_GlobalInvocationID.y;
  if (c >= p.cols || r >= p.rows) return;
  const uint at = p.x_offset + r * p.x_stride + c;
  const float u = x[at];
  const float z = clamp(0.7978845608028654 * (u + 0.044715 * u * u * u), -10.0, 10.0);
  const float e = exp(2.0 * z);
  x[at] = 0.5 * u * (1.0 + (e - 1.0) / (e + 1.0));
}
