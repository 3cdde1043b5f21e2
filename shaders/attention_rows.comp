#version 450
// Causal attention of a ragged batch over a paged KV store, for CPU devices (lavapipe): one
// invocation per (query row, head) walks the slots its row sees with an online softmax, with
// no shared memory and no barriers (both are emulated, and costly, on a CPU). Loads are vec4:
// head_dim, and the offsets and strides of q and out, are multiples of 4. Compiled once per
// store type (KV_F32, KV_F16, KV_Q8_0); the same results as attention.comp, which GPUs use.
// Lavapipe makes each storage-buffer load a loop over the lanes, so loads are what to save:
// the query is loaded once (not once per key), and Q8_0 keys and values, when a head is whole
// blocks, are read a block at a time (9 words, one scale) rather than 4 elements at a time.
//
// With kSplit = 8 (few pairs: decode), the 8 lanes of a subgroup share one (row, head): lane j
// walks keys j, j + 8, ..., and the lanes' partial softmaxes merge through subgroupShuffleXor,
// because one invocation walking a long context alone leaves the SIMD lanes idle.
#include "include/common.glsl"
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable

layout(constant_id = 1) const uint kSplit = 1u;  // lanes per (row, head): 1 or 8
const uint kMaxHeadDim4 = 64u;  // head_dim <= 256
// Invocations per workgroup: 8, fewer when there are few (row, head) pairs (decode of one
// sequence: its heads), so that they still spread over more than one workgroup, i.e. more
// than one lavapipe thread.
layout(local_size_x_id = 0, local_size_x = 8) in;
layout(std430, binding = 0) readonly buffer Q { vec4 q[]; };
layout(std430, binding = 3) readonly buffer Batch { int batch[]; };
layout(std430, binding = 4) writeonly buffer Out { vec4 out_data[]; };
#define KV_KEYS_BINDING 1
#define KV_VALUES_BINDING 2
#define KV_PART_SLOTS_ID 2  // _split variants (kv_parts.glsl)
#if defined(CAPTURE_WEIGHTS)
// The scaled scores as they are computed, turned into softmax weights once the final maximum
// and sum are known; each lane rewrites only the entries it wrote.
layout(std430, binding = 5) buffer Weights { float weights[]; };
#endif

#include "include/attention_push.glsl"
#if defined(CAPTURE_WEIGHTS)
#define KV_EXTRA_BINDING 6
#else
#define KV_EXTRA_BINDING 5
#endif
#include "include/kv_read.glsl"

vec4 query[kMaxHeadDim4];  // this invocation's query row, loaded once for all keys
vec4 acc[kMaxHeadDim4];

// q . key of `slot`, over the head's d4 vec4 columns starting at element kv_col.
float dot_key(uint slot, uint kv_col, uint d4) {
  float score = 0.0;
#if defined(KV_Q8_0)
  if (p.head_dim % 32u == 0u) {  // whole blocks: each scale loaded and converted once
    for (uint c = 0u; c < d4; c += 8u) {
      vec4 parts[8];
      key_block(slot, kv_col + 4u * c, parts);
      [[unroll]] for (uint j = 0u; j < 8u; ++j) score += dot(query[c + j], parts[j]);
    }
    return score;
  }
#endif
  for (uint c = 0u; c < d4; ++c) score += dot(query[c], key4(slot, kv_col + 4u * c));
  return score;
}

// acc = acc * rescale + weight * value of `slot`.
void add_value(uint slot, uint kv_col, uint d4, float rescale, float weight) {
#if defined(KV_Q8_0)
  if (p.head_dim % 32u == 0u) {
    for (uint c = 0u; c < d4; c += 8u) {
      vec4 parts[8];
      value_block(slot, kv_col + 4u * c, parts);
      [[unroll]] for (uint j = 0u; j < 8u; ++j) acc[c + j] = acc[c + j] * rescale + weight * parts[j];
    }
    return;
  }
#endif
  for (uint c = 0u; c < d4; ++c) acc[c] = acc[c] * rescale + weight * value4(slot, kv_col + 4u * c);
}

float running_max = -1.0 / 0.0;
float running_sum = 0.0;

// exp(from - to), 0 for a part that saw no key (from = -inf; to may be -inf too).
float rescale_factor(float from, float to) { return from == -1.0 / 0.0 ? 0.0 : exp(from - to); }

// Merges the partial softmaxes of the kSplit lanes sharing a (row, head) (butterfly: every lane
// ends with the whole). Lavapipe makes a shuffle with a constant distance a register move.
void merge_parts(uint d4) {
  [[unroll]] for (uint distance = 1u; distance < kSplit; distance *= 2u) {
    const float other_max = subgroupShuffleXor(running_max, distance);
    const float other_sum = subgroupShuffleXor(running_sum, distance);
    const float new_max = max(running_max, other_max);
    const float mine = rescale_factor(running_max, new_max);
    const float other = rescale_factor(other_max, new_max);
    running_sum = running_sum * mine + other_sum * other;
    running_max = new_max;
    for (uint c = 0u; c < d4; ++c) acc[c] = acc[c] * mine + subgroupShuffleXor(acc[c], distance) * other;
  }
}

void main() {
  const uint id = linear_workgroup() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  const uint pairs = p.n_heads * p.n_queries;
  // With kSplit > 1 every lane takes part in the shuffles: lanes past the end repeat the last
  // pair and write nothing.
  if (kSplit == 1u && id >= pairs) return;
  const uint pair = min(id / kSplit, pairs - 1u);
  const uint part = id % kSplit;
  const uint head = pair % p.n_heads;
  const uint row = pair / p.n_heads;
  const uint d4 = p.head_dim / 4u;
  const uint n_keys = uint(batch[p.positions_at + row]) + 1u;
  const uint slots_at = p.slot_map_at + uint(batch[p.context_offsets_at + row]);
  const uint kv_col = (head / p.group) * p.head_dim;
  const uint q_at = (p.q_offset + row * p.q_stride + head * p.head_dim) / 4u;

  for (uint c = 0u; c < d4; ++c) {
    query[c] = q[q_at + c];
    acc[c] = vec4(0.0);
  }
#if defined(CAPTURE_WEIGHTS)
  const bool captures = id / kSplit < pairs;  // lanes past the end repeat the last pair
  const uint weights_at = p.weights_offset + pair * p.weights_stride;  // pair = row * n_heads + head
#endif
  const uint first = first_key(n_keys);
  for (uint t = first + part; t < n_keys; t += kSplit) {
    const uint slot = uint(batch[slots_at + t]);
    const float score = capped_score(dot_key(slot, kv_col, d4) * p.scale);
#if defined(CAPTURE_WEIGHTS)
    if (captures) weights[weights_at + t] = score;
#endif
    const float new_max = max(running_max, score);
    const float rescale = rescale_factor(running_max, new_max);  // 0 for the first key
    const float weight = exp(score - new_max);
    running_sum = running_sum * rescale + weight;
    running_max = new_max;
    add_value(slot, kv_col, d4, rescale, weight);
  }
  if (kSplit > 1u) merge_parts(d4);
#if defined(CAPTURE_WEIGHTS)
  if (captures) {
    for (uint t = part; t < first; t += kSplit) weights[weights_at + t] = 0.0;
    for (uint t = first + part; t < n_keys; t += kSplit) {
      weights[weights_at + t] = exp(weights[weights_at + t] - running_max) / running_sum;
    }
  }
#endif
  if (id / kSplit >= pairs || part != 0u) return;
  const uint out_at = (p.out_offset + row * p.out_stride + head * p.head_dim) / 4u;
  for (uint c = 0u; c < d4; ++c) out_data[out_at + c] = acc[c] / running_sum;
}
