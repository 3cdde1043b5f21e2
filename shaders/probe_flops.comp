#version 450
// Device probe, arithmetic roof: independent chains of vec4 multiply-adds in registers
// (8 chains x 4 lanes x 2 flops x iterations per invocation), one float written at the end.
layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer Sums { float sums[]; };

layout(push_constant) uniform Push {
  uint iterations;
  float seed;
} p;

void main() {
  const float s = p.seed + float(gl_GlobalInvocationID.x) * 1e-7;
  vec4 a0 = vec4(s), a1 = vec4(s + 1.0), a2 = vec4(s + 2.0), a3 = vec4(s + 3.0);
  vec4 a4 = vec4(s + 4.0), a5 = vec4(s + 5.0), a6 = vec4(s + 6.0), a7 = vec4(s + 7.0);
  const vec4 m = vec4(0.999999);
  const vec4 c = vec4(1e-6);
  for (uint i = 0u; i < p.iterations; ++i) {
    a0 = a0 * m + c; a1 = a1 * m + c; a2 = a2 * m + c; a3 = a3 * m + c;
    a4 = a4 * m + c; a5 = a5 * m + c; a6 = a6 * m + c; a7 = a7 * m + c;
  }
  const vec4 total = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
  sums[gl_GlobalInvocationID.x] = total.x + total.y + total.z + total.w;
}
