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
  uint pair_step;  // 2: two adjacent pairs per invocation in 16-byte accesses (normal mode only)
} p;
layout(std430, binding = 0) buffer X0v { vec4 x0v[]; };
layout(std430, binding = 1) readonly buffer Table4 { vec4 cos_sin4[]; };
layout(std430, binding = 2) buffer X1v { vec4 x1v[]; };

vec4 rotate_two(vec4 v, vec4 cs) {
  return vec4(v.x * cs.x - v.y * cs.y, v.x * cs.y + v.y * cs.x, v.z * cs.z - v.w * cs.w,
              v.z * cs.w + v.w * cs.z);
}

#define ROTATE(BUFFER, AT)                      \
  {                                             \
    const float a = BUFFER[AT];                 \
    const float b = BUFFER[AT + partner];       \
    BUFFER[AT] = a * cs.x - b * cs.y;           \
    BUFFER[AT + partner] = a * cs.y + b * cs.x; \
  }

void main() {
  const uint pair = gl_GlobalInvocationID.x * p.pair_step;
  const bool second = gl_WorkGroupID.z == 1u;
  if (pair >= (second ? p.pairs_per_row1 : p.pairs_per_row0)) return;
  const uint i = pair % p.pairs_per_head;
  if (p.pair_step == 2u) {  // pairs (i, i + 1): elements 2i .. 2i + 3, a 16-byte unit
    for (uint row = gl_WorkGroupID.y; row < p.rows; row += gl_NumWorkGroups.y) {
      const vec4 cs = cos_sin4[(row * p.pairs_per_head + i) / 2u];
      if (second) {
        const uint at = (p.x1_offset + row * p.x1_stride) / 4u + pair / 2u;
        x1v[at] = rotate_two(x1v[at], cs);
      } else {
        const uint at = (p.x0_offset + row * p.x0_stride) / 4u + pair / 2u;
        x0v[at] = rotate_two(x0v[at], cs);
      }
    }
    return;
  }
  // Where the pair's first element sits in its row, and how far its partner is.
  const uint first = p.neox != 0u ? (pair - i) * 2u + i : 2u * pair;
  const uint partner = p.neox != 0u ? p.pairs_per_head : 1u;
  // Workgroup y walks rows y, y + groups, ...: a CPU device gets fewer groups than rows (each
  // costs lavapipe more than its 64 pairs), a GPU one per row.
  for (uint row = gl_WorkGroupID.y; row < p.rows; row += gl_NumWorkGroups.y) {
    const vec2 cs = cos_sin[row * p.pairs_per_head + i];
    if (second) {
      ROTATE(x1, p.x1_offset + row * p.x1_stride + first)
    } else {
      ROTATE(x0, p.x0_offset + row * p.x0_stride + first)
    }
  }
}
