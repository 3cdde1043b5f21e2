// The push constants of attention.comp and attention_rows.comp (AttentionPush in
// vulkan_backend.cpp). Offsets and strides of q and out are in floats. The batch buffer holds
// the AttentionBatch arrays back to back; *_at are where each starts, in ints. The capture
// variants (CAPTURE_WEIGHTS) write the softmax weights of (row, head) at
// weights[weights_offset + (row * n_heads + head) * weights_stride + t].
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
} p;
