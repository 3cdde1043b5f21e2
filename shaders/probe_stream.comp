#version 450
// Device probe, memory roof: every invocation streams a strided share of a large buffer with
// 16-byte loads and writes one sum (so the reads cannot be optimised away).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Source { vec4 source[]; };
layout(std430, binding = 1) writeonly buffer Sums { float sums[]; };

layout(push_constant) uniform Push {
  uint vec4_count;
} p;

void main() {
  const uint id = gl_GlobalInvocationID.x;
  const uint stride = gl_NumWorkGroups.x * 256u;
  vec4 acc = vec4(0.0);
  for (uint i = id; i < p.vec4_count; i += stride) acc += source[i];
  sums[id] = acc.x + acc.y + acc.z + acc.w;
}
