#version 450
// x *= value, in place. Compiled with SOFT_CAP as soft_cap: x = value * tanh(x / value), tanh
// written out with a clamped argument as in gelu.comp (tanh(10) is 1 in float anyway).
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer X { float x[]; };

layout(push_constant) uniform Push {
  uint rows;
  uint cols;
  uint x_offset;
  uint x_stride;
  float value;
} p;

void main() {
  const uint c = gl_GlobalInvocationID.x;
  const uint r = gl_GlobalInvocationID.y;
  if (c >= p.cols || r >= p.rows) return;
  const uint at = p.x_offset + r * p.x_stride + c;
#if defined(SOFT_CAP)
  const float e = exp(2.0 * clamp(x[at] / p.value, -10.0, 10.0));
  x[at] = p.value * (e - 1.0) / (e + 1.0);
#else
  x[at] *= p.value;
#endif
}
