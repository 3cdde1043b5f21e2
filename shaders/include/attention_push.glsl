// The push constants of attention.comp and attention_rows.comp (AttentionPush in
// vulkan_backend.cpp). Offsets and strides of q and out are in floats. The batch buffer holds
// the AttentionBatch arrays back to back; *_at are where each starts, in ints. The capture
// variants (CAPTURE_WEIGHTS) write the softmax weights of (row, head) at
// weights[weights_offset + (row * n_heads + head) * weights_stride + t]. softcap > 0 turns a
// scaled score s into softcap * tanh(s / softcap); window > 0 hides keys more than window
// positions back (their weights are 0).
layout(push_constant) uniform Push {
  uint head_dim;
  uint group;  // query heads per KV head
  uint kv_dim;
  uint q_offset;
  uint q_stride;
  uint out_offset;
  uint out_stride;
  float scale;
  uint n_heads;
  uint n_queries;
  uint positions_at;
  uint context_offsets_at;
  uint slot_map_at;
  uint weights_offset;
  uint weights_stride;
  float softcap;
  uint window;
} p;

// The first key a query with n_keys keys sees.
uint first_key(uint n_keys) {
  return p.window > 0u && n_keys > p.window ? n_keys - p.window : 0u;
}

// A scaled score, soft-capped when asked; tanh written out with a clamped argument (a driver's
// tanh built from exp can return NaN for large inputs).
float capped_score(float score) {
  if (p.softcap <= 0.0) return score;
  const float e = exp(2.0 * clamp(score / p.softcap, -10.0, 10.0));
  return p.softcap * (e - 1.0) / (e + 1.0);
}
