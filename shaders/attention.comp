#version 450
// Causal attention of a ragged batch over a paged KV store. One workgroup per (head, query
// row); the row attends to the slots batch.slot_map[context_offset + t], t = 0 ..= position.
// Keys are taken in chunks of 256: the chunk's scores go to shared memory, and a running
// maximum and sum (online softmax) rescale what earlier chunks accumulated, so any context
// length fits in fixed shared memory. Thread j owns output dimensions j, j+64, j+128, j+192.
// Compiled once per store type (KV_F32, KV_F16, KV_Q8_0); keys and values are dequantised
// as they are read.
#include "include/common.glsl"

const uint kThreads = 64u;
const uint kChunk = 256u;
const uint kMaxHeadDim = 256u;
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 3) readonly buffer Batch { int batch[]; };
layout(std430, binding = 4) writeonly buffer Out { float out_data[]; };
#define KV_KEYS_BINDING 1
#define KV_VALUES_BINDING 2
#define KV_PART_SLOTS_ID 0  // _split variants (kv_parts.glsl)
#if defined(CAPTURE_WEIGHTS)
// The scaled scores as they are computed, turned into softmax weights once the final maximum
// and sum are known; each thread rewrites only the entries it wrote.
layout(std430, binding = 5) buffer Weights { float weights[]; };
#endif

#include "include/attention_push.glsl"
#if defined(CAPTURE_WEIGHTS)
#define KV_EXTRA_BINDING 6
#else
#define KV_EXTRA_BINDING 5
#endif
#include "include/kv_read.glsl"

shared float query[kMaxHeadDim];
shared float scores[kChunk];
shared uint chunk_slots[kChunk];  // the slot of each key of the chunk
shared float partial[kThreads];

float workgroup_reduce(float value, bool take_max) {
  partial[gl_LocalInvocationID.x] = value;
  barrier();
  [[unroll]] for (uint width = kThreads / 2u; width > 0u; width >>= 1) {
    if (gl_LocalInvocationID.x < width) {
      const float other = partial[gl_LocalInvocationID.x + width];
      const float mine = partial[gl_LocalInvocationID.x];
      partial[gl_LocalInvocationID.x] = take_max ? max(mine, other) : mine + other;
    }
    barrier();
  }
  const float result = partial[0];
  barrier();
  return result;
}

void main() {
  const uint head = gl_WorkGroupID.x;
  const uint row = gl_WorkGroupID.y;
  const uint tid = gl_LocalInvocationID.x;
  const uint d = p.head_dim;
  const uint n_keys = uint(batch[p.positions_at + row]) + 1u;
  const uint slots_at = p.slot_map_at + uint(batch[p.context_offsets_at + row]);
  const uint kv_col = (head / p.group) * d;

  const uint q_at = p.q_offset + row * p.q_stride + head * d;
  for (uint c = tid; c < d; c += kThreads) query[c] = q[q_at + c];
  barrier();

#if defined(CAPTURE_WEIGHTS)
  const uint weights_at = p.weights_offset + (row * p.n_heads + head) * p.weights_stride;
#endif
  const uint first = first_key(n_keys);
  float running_max = -1.0 / 0.0;
  float running_sum = 0.0;
  float acc[4] = float[](0.0, 0.0, 0.0, 0.0);
  for (uint base = first; base < n_keys; base += kChunk) {
    const uint count = min(kChunk, n_keys - base);
    float chunk_max = -1.0 / 0.0;
    for (uint t = tid; t < count; t += kThreads) {
      const uint slot = uint(batch[slots_at + base + t]);
      chunk_slots[t] = slot;
      float dot_qk = 0.0;
      for (uint c = 0u; c < d; ++c) dot_qk += query[c] * key(slot, kv_col + c);
      scores[t] = capped_score(dot_qk * p.scale);
#if defined(CAPTURE_WEIGHTS)
      weights[weights_at + base + t] = scores[t];
#endif
      chunk_max = max(chunk_max, scores[t]);
    }
    const float new_max = max(running_max, workgroup_reduce(chunk_max, true));
    float chunk_sum = 0.0;
    for (uint t = tid; t < count; t += kThreads) {
      scores[t] = exp(scores[t] - new_max);
      chunk_sum += scores[t];
    }
    const float rescale = exp(running_max - new_max);  // 0 on the first chunk
    // Its barriers also make this chunk's scores and slots visible to every thread.
    running_sum = running_sum * rescale + workgroup_reduce(chunk_sum, false);
    running_max = new_max;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      const uint c = tid + kThreads * j;
      if (c >= d) break;
      float sum = acc[j] * rescale;
      for (uint t = 0u; t < count; ++t) sum += scores[t] * value(chunk_slots[t], kv_col + c);
      acc[j] = sum;
    }
    barrier();  // everyone is done with scores before the next chunk overwrites them
  }

#if defined(CAPTURE_WEIGHTS)
  for (uint t = tid; t < first; t += kThreads) weights[weights_at + t] = 0.0;
  for (uint t = first + tid; t < n_keys; t += kThreads) {
    weights[weights_at + t] = exp(weights[weights_at + t] - running_max) / running_sum;
  }
#endif
  [[unroll]] for (uint j = 0u; j < 4u; ++j) {
    const uint c = tid + kThreads * j;
    if (c < d) out_data[p.out_offset + row * p.out_stride + head * d + c] = acc[j] / running_sum;
  }
}
