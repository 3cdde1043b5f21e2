#version 450
// Causal attention of a ragged batch over a paged KV store, for CPU devices (lavapipe): one
// invocation per (query row, head) walks the slots its row sees with an online softmax, with
// no shared memory and no barriers (both are emulated, and costly, on a CPU). Loads are vec4:
// head_dim, and the offsets and strides of q and out, are multiples of 4. Compiled once per
// store type (KV_F32, KV_F16, KV_Q8_0); the same results as attention.comp, which GPUs use.
#include "include/common.glsl"

const uint kMaxHeadDim4 = 64u;  // head_dim <= 256
layout(local_size_x = 8) in;
layout(std430, binding = 0) readonly buffer Q { vec4 q[]; };
layout(std430, binding = 3) readonly buffer Batch { int batch[]; };
layout(std430, binding = 4) writeonly buffer Out { vec4 out_data[]; };
#define KV_KEYS_BINDING 1
#define KV_VALUES_BINDING 2

#include "include/attention_push.glsl"
#include "include/kv_read.glsl"

void main() {
  const uint id = linear_workgroup() * 8u + gl_LocalInvocationID.x;
  if (id >= p.n_heads * p.n_queries) return;
  const uint head = id % p.n_heads;
  const uint row = id / p.n_heads;
  const uint d4 = p.head_dim / 4u;
  const uint n_keys = uint(batch[p.positions_at + row]) + 1u;
  const uint slots_at = p.slot_map_at + uint(batch[p.context_offsets_at + row]);
  const uint kv_col = (head / p.group) * p.head_dim;
  const uint q_at = (p.q_offset + row * p.q_stride + head * p.head_dim) / 4u;

  vec4 acc[kMaxHeadDim4];
  for (uint c = 0u; c < d4; ++c) acc[c] = vec4(0.0);
  float running_max = -1.0 / 0.0;
  float running_sum = 0.0;
  for (uint t = 0u; t < n_keys; ++t) {
    const uint slot = uint(batch[slots_at + t]);
    float score = 0.0;
    for (uint c = 0u; c < d4; ++c) score += dot(q[q_at + c], key4(slot, kv_col + 4u * c));
    score *= p.scale;
    const float new_max = max(running_max, score);
    const float rescale = exp(running_max - new_max);  // 0 for the first key
    const float weight = exp(score - new_max);
    running_sum = running_sum * rescale + weight;
    running_max = new_max;
    for (uint c = 0u; c < d4; ++c) {
      acc[c] = acc[c] * rescale + weight * value4(slot, kv_col + 4u * c);
    }
  }
  const uint out_at = (p.out_offset + row * p.out_stride + head * p.head_dim) / 4u;
  for (uint c = 0u; c < d4; ++c) out_data[out_at + c] = acc[c] / running_sum;
}
