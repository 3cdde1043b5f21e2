#version 450
// Rotates the pairs of every head in place, in one or two tensors (the queries and keys of a
// step: workgroup z = 0 or 1): adjacent pairs (2i, 2i+1) in normal mode, (i, i + d/2) in neox
// mode. The host computes cos and sin of each pair's angle (RopeSpec::angle) in double
// precision into a table [rows x head_dim/2]: exact angles without relying on the device's
// sin/cos for large arguments.
#include "include/common.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer X0 { float x0[]; };
layout(std430, binding = 1) readonly buffer Table { vec2 cos_sin[]; };
layout(std430, binding = 2) buffer X1 { float x1[]; };

layout(push_constant) uniform Push {
  uint rows;
  uint pairs_per_head;  // head_dim / 2
  uint pairs_per_row0;  // cols / 2 of each tensor
  uint x0_offset;
  uint x0_stride;
  uint pairs_per_row1;
  uint x1_offset;
  uint x1_stride;
  uint neox;
} p;

#define ROTATE(BUFFER, AT)                      \
  {                                             \
    const float a = BUFFER[AT];                 \
    const float b = BUFFER[AT + partner];       \
    BUFFER[AT] = a * cs.x - b * cs.y;           \
    BUFFER[AT + partner] = a * cs.y + b * cs.x; \
  }

void main() {
  const uint pair = gl_GlobalInvocationID.x;
  const uint row = gl_GlobalInvocationID.y;
  const bool second = gl_WorkGroupID.z == 1u;
  if (pair >= (second ? p.pairs_per_row1 : p.pairs_per_row0) || row >= p.rows) return;
  const uint i = pair % p.pairs_per_head;
  const vec2 cs = cos_sin[row * p.pairs_per_head + i];
  // Where the pair's first element sits in its row, and how far its partner is.
  const uint first = p.neox != 0u ? (pair - i) * 2u + i : 2u * pair;
  const uint partner = p.neox != 0u ? p.pairs_per_head : 1u;
  if (second) {
    ROTATE(x1, p.x1_offset + row * p.x1_stride + first)
  } else {
    ROTATE(x0, p.x0_offset + row * p.x0_stride + first)
  }
}
