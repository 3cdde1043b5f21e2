#version 450
// dst rows = src rows for one or two pairs of strided matrix views of the same shape (two
// consecutive copy_rows merged: workgroup z = 0 or 1), e.g. the logit rows of a batch.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Src0 { float src0[]; };
layout(std430, binding = 1) writeonly buffer Dst0 { float dst0[]; };
layout(std430, binding = 2) readonly buffer Src1 { float src1[]; };
layout(std430, binding = 3) writeonly buffer Dst1 { float dst1[]; };

layout(push_constant) uniform Push {
  uint rows;
  uint cols;
  uint src0_offset;
  uint src0_stride;
  uint dst0_offset;
  uint dst0_stride;
  uint src1_offset;
  uint src1_stride;
  uint dst1_offset;
  uint dst1_stride;
} p;

void main() {
  const uint c = gl_GlobalInvocationID.x;
  const uint r = gl_GlobalInvocationID.y;
  if (c >= p.cols || r >= p.rows) return;
  if (gl_WorkGroupID.z == 1u) {
    dst1[p.dst1_offset + r * p.dst1_stride + c] = src1[p.src1_offset + r * p.src1_stride + c];
  } else {
    dst0[p.dst0_offset + r * p.dst0_stride + c] = src0[p.src0_offset + r * p.src0_stride + c];
  }
}
