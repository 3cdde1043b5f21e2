#version 450
// Device probe, memory roof: streams a large buffer with 16-byte loads. Every invocation
// walks four contiguous runs side by side with a uniform trip count: the access pattern of the
// matrix-vector kernel (each invocation walks four weight rows), the fastest pattern measured
// on CPU implementations such as lavapipe. One sum per
// invocation is written so that the reads cannot be optimised away.
layout(local_size_x = 16) in;
layout(std430, binding = 0) readonly buffer Source { vec4 source[]; };
layout(std430, binding = 1) writeonly buffer Sums { float sums[]; };

layout(push_constant) uniform Push {
  uint iterations;  // each invocation reads 4 x iterations vec4s
} p;

void main() {
  const uint id = gl_GlobalInvocationID.x;
  const uint run = id * p.iterations * 4u;  // four runs of `iterations` vec4s
  vec4 a0 = vec4(0.0), a1 = vec4(0.0), a2 = vec4(0.0), a3 = vec4(0.0);
  for (uint i = 0u; i < p.iterations; ++i) {
    a0 += source[run + i];
    a1 += source[run + p.iterations + i];
    a2 += source[run + 2u * p.iterations + i];
    a3 += source[run + 3u * p.iterations + i];
  }
  const vec4 total = a0 + a1 + a2 + a3;
  sums[id] = total.x + total.y + total.z + total.w;
}
