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
//
// With kShareKeys = 8 (many rows: prefill), the 8 lanes of a subgroup take 8 consecutive query
// rows of one head and walk the keys together: each lane loads an eighth of a key (and of a
// value) and subgroupShuffle hands the parts around, 8x fewer loads than a lane loading whole
// keys for its own row (as matmul_lanes shares x). A lane ignores keys its row does not see
// (causal mask, window). Rows of different sequences see different slots: a block that mixes
// sequences walks per row.
//
// With head_dim as a specialization constant (kHeadDim4) the loops over a head's vec4 columns
// have a constant trip count and the driver unrolls them: the query and accumulator arrays are
// then indexed by constants and stay in registers (lavapipe makes an indexed private array a
// per-lane loop of loads and stores: 2x the time). No [[unroll]] on those loops: on a bound
// known only at run time it made lavapipe compile the split-store variants for minutes.
#include "include/common.glsl"
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable

layout(constant_id = 1) const uint kSplit = 1u;  // lanes per (row, head): 1 or 8
// (constant_id 2: slots per part of a split store, kv_parts.glsl)
layout(constant_id = 3) const uint kShareKeys = 1u;  // rows sharing each key's loads: 1 or 8
// head_dim / 4, or 0: p.head_dim / 4 (the kernels prepared before a model's head_dim is known).
layout(constant_id = 4) const uint kHeadDim4 = 0u;
const uint kMaxHeadDim4 = 64u;  // head_dim <= 256
const uint kKeyChunk = 2u;      // keys per online-softmax update when rows share keys
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

// vec4 columns of a head: a constant when kHeadDim4 is one.
uint head_vec4s() { return kHeadDim4 > 0u ? kHeadDim4 : p.head_dim / 4u; }

vec4 query[kMaxHeadDim4];  // this invocation's query row, loaded once for all keys
vec4 acc[kMaxHeadDim4];

// q . key of `slot`, over the head's vec4 columns starting at element kv_col.
float dot_key(uint slot, uint kv_col) {
  const uint d4 = head_vec4s();
  float score = 0.0;
#if defined(KV_Q8_0)
  if (d4 % 8u == 0u) {  // whole blocks: each scale loaded and converted once
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
void add_value(uint slot, uint kv_col, float rescale, float weight) {
  const uint d4 = head_vec4s();
#if defined(KV_Q8_0)
  if (d4 % 8u == 0u) {
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
void merge_parts() {
  const uint d4 = head_vec4s();
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

// The lanes' butterfly reductions (all 8 lanes of the subgroup take part).
uint lanes_max(uint value) {
  [[unroll]] for (uint distance = 1u; distance < 8u; distance *= 2u) {
    value = max(value, subgroupShuffleXor(value, distance));
  }
  return value;
}
uint lanes_min(uint value) {
  [[unroll]] for (uint distance = 1u; distance < 8u; distance *= 2u) {
    value = min(value, subgroupShuffleXor(value, distance));
  }
  return value;
}

// One key of the online softmax: a score for a key this row may not see changes nothing.
void add_key(float score, bool seen, out float rescale, out float weight) {
  const float new_max = seen ? max(running_max, score) : running_max;
  rescale = seen ? rescale_factor(running_max, new_max) : 1.0;  // 0 for the first key
  weight = seen ? exp(score - new_max) : 0.0;
  running_sum = running_sum * rescale + weight;
  running_max = new_max;
}

#if defined(CAPTURE_WEIGHTS)
#define CAPTURE_SCORE(t, score) \
  if (captures) weights[weights_at + (t)] = (score);
#else
#define CAPTURE_SCORE(t, score)
#endif

void main() {
  const uint id = linear_workgroup() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  const uint pairs = p.n_heads * p.n_queries;
  const uint lane = gl_SubgroupInvocationID;  // which eighth of a shared key this lane loads
  // With kSplit > 1 every lane takes part in the shuffles: lanes past the end repeat the last
  // pair and write nothing. With kShareKeys > 1 a subgroup is 8 rows of one head, rows past the
  // end repeating the last row.
  if (pairs == 0u || (kSplit == 1u && kShareKeys == 1u && id >= pairs)) return;
  const uint block = id / 8u;  // kShareKeys: (block of 8 rows, head), head fastest
  const uint pair = kShareKeys > 1u
                        ? min((block / p.n_heads) * 8u + id % 8u, p.n_queries - 1u) * p.n_heads +
                              block % p.n_heads
                        : min(id / kSplit, pairs - 1u);
  const bool writes = kShareKeys > 1u ? block < p.n_heads * ((p.n_queries + 7u) / 8u) &&
                                            (block / p.n_heads) * 8u + id % 8u < p.n_queries
                                      : id / kSplit < pairs && id % kSplit == 0u;
  const uint part = id % kSplit;
  const uint head = pair % p.n_heads;
  const uint row = pair / p.n_heads;
  const uint n_keys = uint(batch[p.positions_at + row]) + 1u;
  const uint slots_at = p.slot_map_at + uint(batch[p.context_offsets_at + row]);
  const uint kv_col = (head / p.group) * p.head_dim;
  const uint q_at = (p.q_offset + row * p.q_stride + head * p.head_dim) / 4u;
  const uint d4 = head_vec4s();

  for (uint c = 0u; c < d4; ++c) {
    query[c] = q[q_at + c];
    acc[c] = vec4(0.0);
  }
#if defined(CAPTURE_WEIGHTS)
  const bool captures = writes || (kSplit > 1u && id / kSplit < pairs);
  const uint weights_at = p.weights_offset + pair * p.weights_stride;  // pair = row * n_heads + head
#endif
  const uint first = first_key(n_keys);
  // The rows of a block share slots when they are one sequence's (the same slot list).
  const bool one_sequence = kShareKeys > 1u && lanes_min(slots_at) == lanes_max(slots_at);
  if (one_sequence) {
    const uint block_end = lanes_max(n_keys);
    // Keys in chunks of kKeyChunk: one running-max update and one rescale of the accumulator
    // per chunk, one exp per key and one per chunk instead of two per key (lavapipe, head_dim
    // 32: 8% off the prefill's attention; chunks of 4 gain no more, of 8 spill registers).
    for (uint t0 = lanes_min(first); t0 < block_end; t0 += kKeyChunk) {
      // This lane's eighths of each key and value: vec4 columns lane, lane + 8, ...
      vec4 key_parts[kKeyChunk][kMaxHeadDim4 / 8u], value_parts[kKeyChunk][kMaxHeadDim4 / 8u];
      float scores[kKeyChunk];
      bool seen[kKeyChunk];
      float chunk_max = running_max;
      [[unroll]] for (uint k = 0u; k < kKeyChunk; ++k) {
        const uint t = t0 + k;
        const bool loaded = t < block_end;  // the same for every lane
        const uint slot = loaded ? uint(batch[slots_at + t]) : 0u;
        for (uint m = 0u; m < (d4 + 7u) / 8u; ++m) {
          key_parts[k][m] = vec4(0.0);
          value_parts[k][m] = vec4(0.0);
          if (loaded && 8u * m + lane < d4) {
            key_parts[k][m] = key4(slot, kv_col + 4u * (8u * m + lane));
            value_parts[k][m] = value4(slot, kv_col + 4u * (8u * m + lane));
          }
        }
        float score = 0.0;
        for (uint c = 0u; c < d4; ++c) {
          score += dot(query[c], subgroupShuffle(key_parts[k][c / 8u], c % 8u));
        }
        scores[k] = capped_score(score * p.scale);
        seen[k] = t >= first && t < n_keys;
        if (seen[k]) {
          CAPTURE_SCORE(t, scores[k])
          chunk_max = max(chunk_max, scores[k]);
        }
      }
      // 0 while no key has been seen (the accumulator is still 0), 1 when the maximum stays.
      const float rescale = rescale_factor(running_max, chunk_max);
      float weights[kKeyChunk];
      float weight_sum = 0.0;
      [[unroll]] for (uint k = 0u; k < kKeyChunk; ++k) {
        weights[k] = seen[k] ? exp(scores[k] - chunk_max) : 0.0;
        weight_sum += weights[k];
      }
      running_sum = running_sum * rescale + weight_sum;
      running_max = chunk_max;
      for (uint c = 0u; c < d4; ++c) {
        vec4 sum = acc[c] * rescale;
        [[unroll]] for (uint k = 0u; k < kKeyChunk; ++k) {
          sum += weights[k] * subgroupShuffle(value_parts[k][c / 8u], c % 8u);
        }
        acc[c] = sum;
      }
    }
  } else {
    for (uint t = first + part; t < n_keys; t += kSplit) {
      const uint slot = uint(batch[slots_at + t]);
      const float score = capped_score(dot_key(slot, kv_col) * p.scale);
      CAPTURE_SCORE(t, score)
      float rescale, weight;
      add_key(score, true, rescale, weight);
      add_value(slot, kv_col, rescale, weight);
    }
  }
  if (kSplit > 1u) merge_parts();
#if defined(CAPTURE_WEIGHTS)
  if (captures) {
    for (uint t = part; t < first; t += kSplit) weights[weights_at + t] = 0.0;
    for (uint t = first + part; t < n_keys; t += kSplit) {
      weights[weights_at + t] = exp(weights[weights_at + t] - running_max) / running_sum;
    }
  }
#endif
  if (!writes) return;
  const uint out_at = (p.out_offset + row * p.out_stride + head * p.head_dim) / 4u;
  for (uint c = 0u; c < d4; ++c) out_data[out_at + c] = acc[c] / running_sum;
}
