#version 450
// dst row i = src row rows[i], for strided matrix views (e.g. the rows of a batch whose
// logits are wanted; a plain copy of a view is the rows 0, 1, ...).
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Src { float src[]; };
layout(std430, binding = 1) writeonly buffer Dst { float dst[]; };
layout(std430, binding = 2) readonly buffer Rows { int rows[]; };

layout(push_constant) uniform Push {
  uint rows;  // of dst
  uint cols;
  uint src_offset;
  uint src_stride;
  uint dst_offset;
  uint dst_stride;
} p;

void main() {
  const uint c = gl_GlobalInvocationID.x;
  const uint r = gl_GlobalInvocationID.y;
  if (c >= p.cols || r >= p.rows) return;
  dst[p.dst_offset + r * p.dst_stride + c] = src[p.src_offset + uint(rows[r]) * p.src_stride + c];
}
