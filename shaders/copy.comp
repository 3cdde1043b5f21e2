#version 450
// dst rows = src rows for two strided matrix views (keys and values into the cache).
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Src { float src[]; };
layout(std430, binding = 1) writeonly buffer Dst { float dst[]; };

layout(push_constant) uniform Push {
  uint rows;
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
  dst[p.dst_offset + r * p.dst_stride + c] = src[p.src_offset + r * p.src_stride + c];
}
