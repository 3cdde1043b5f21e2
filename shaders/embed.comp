#version 450
// out[i] = row ids[i] of a weight table, dequantised. The table may be split over several
// bindings (chunks of whole rows); this dispatch fills only rows of ids in its chunk.
#include "include/common.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 1) readonly buffer Ids { int ids[]; };
layout(std430, binding = 2) writeonly buffer Out { float out_data[]; };

layout(push_constant) uniform Push {
  uint n_ids;
  uint cols;
  uint out_offset;
  uint out_stride;
  uint chunk_first_row;  // table row held at row 0 of this binding
  uint chunk_rows;
} p;

#include "include/weights.glsl"

void main() {
  const uint c = gl_GlobalInvocationID.x;
  const uint i = gl_GlobalInvocationID.y;
  if (c >= p.cols || i >= p.n_ids) return;
  const uint row = uint(ids[i]) - p.chunk_first_row;  // wraps for ids before the chunk
  if (row >= p.chunk_rows) return;
  out_data[p.out_offset + i * p.out_stride + c] = weight_at(row, c, p.chunk_rows, p.cols);
}
