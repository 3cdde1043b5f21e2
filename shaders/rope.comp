#version 450
// Rotates adjacent pairs (2i, 2i+1) of every head in place. The host computes cos and sin of
// position * base^(-2i/d) in double precision into a table [rows x head_dim/2]: exact angles
// without relying on the device's sin/cos for large arguments.
#include "include/common.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Table { vec2 cos_sin[]; };

layout(push_constant) uniform Push {
  uint rows;
  uint pairs_per_row;  // cols / 2
  uint pairs_per_head;  // head_dim / 2
  uint x_offset;
  uint x_stride;
} p;

void main() {
  const uint pair = gl_GlobalInvocationID.x;
  const uint row = gl_GlobalInvocationID.y;
  if (pair >= p.pairs_per_row || row >= p.rows) return;
  const vec2 cs = cos_sin[row * p.pairs_per_head + pair % p.pairs_per_head];
  const uint at = p.x_offset + row * p.x_stride + 2u * pair;
  const float a = x[at];
  const float b = x[at + 1u];
  x[at] = a * cs.x - b * cs.y;
  x[at + 1u] = a * cs.y + b * cs.x;
}
