#version 450
// Causal attention for CPU devices (lavapipe): one invocation per (query token, head) walks
// its keys with an online softmax, with no shared memory and no barriers (both are emulated,
// and costly, on a CPU). Loads are vec4: head_dim, offsets and strides are multiples of 4.
// The same results as attention.comp, which GPUs use.
#include "include/common.glsl"

const uint kMaxHeadDim4 = 64u;  // head_dim <= 256
layout(local_size_x = 8) in;
layout(std430, binding = 0) readonly buffer Q { vec4 q[]; };
layout(std430, binding = 1) readonly buffer K { vec4 k_cache[]; };
layout(std430, binding = 2) readonly buffer V { vec4 v_cache[]; };
layout(std430, binding = 3) writeonly buffer Out { vec4 out_data[]; };

// Offsets and strides in floats, as for attention.comp; all multiples of 4 here.
layout(push_constant) uniform Push {
  uint head_dim;
  uint group;  // query heads per KV head
  uint first_pos;
  uint q_offset;
  uint q_stride;
  uint k_offset;
  uint k_stride;
  uint v_offset;
  uint v_stride;
  uint out_offset;
  uint out_stride;
  float scale;
  uint n_heads;
  uint n_queries;
} p;

void main() {
  const uint id = linear_workgroup() * 8u + gl_LocalInvocationID.x;
  if (id >= p.n_heads * p.n_queries) return;
  const uint head = id % p.n_heads;
  const uint token = id / p.n_heads;
  const uint d4 = p.head_dim / 4u;
  const uint n_keys = p.first_pos + token + 1u;
  const uint kv_col = (head / p.group) * p.head_dim;
  const uint q_at = (p.q_offset + token * p.q_stride + head * p.head_dim) / 4u;

  vec4 acc[kMaxHeadDim4];
  for (uint c = 0u; c < d4; ++c) acc[c] = vec4(0.0);
  float running_max = -1.0 / 0.0;
  float running_sum = 0.0;
  for (uint t = 0u; t < n_keys; ++t) {
    const uint k_at = (p.k_offset + t * p.k_stride + kv_col) / 4u;
    float score = 0.0;
    for (uint c = 0u; c < d4; ++c) score += dot(q[q_at + c], k_cache[k_at + c]);
    score *= p.scale;
    const float new_max = max(running_max, score);
    const float rescale = exp(running_max - new_max);  // 0 for the first key
    const float weight = exp(score - new_max);
    running_sum = running_sum * rescale + weight;
    running_max = new_max;
    const uint v_at = (p.v_offset + t * p.v_stride + kv_col) / 4u;
    for (uint c = 0u; c < d4; ++c) acc[c] = acc[c] * rescale + weight * v_cache[v_at + c];
  }
  const uint out_at = (p.out_offset + token * p.out_stride + head * p.head_dim) / 4u;
  for (uint c = 0u; c < d4; ++c) out_data[out_at + c] = acc[c] / running_sum;
}
