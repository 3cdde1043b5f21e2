// Push constants shared by the matrix-vector and matrix-matrix kernels:
// out[t, out_col_first + r] = sum_k x[t, k] * W[r, k] (+ bias[out_col_first + r]) for the rows
// r of one weight chunk (a weight larger than one binding is split into chunks of whole rows).
layout(push_constant) uniform Push {
  uint n;             // tokens (rows of x and out)
  uint rows;          // weight rows in this chunk
  uint cols;          // k
  uint x_offset;
  uint x_stride;
  uint out_offset;    // element of out[0, out_col_first]
  uint out_stride;
  uint bias_offset;   // element of bias[out_col_first]
  uint has_bias;
} p;

layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer X4 { vec4 x4[]; };  // when offset and stride are multiples of 4
layout(std430, binding = 2) writeonly buffer Out { float out_data[]; };
layout(std430, binding = 3) readonly buffer Bias { float bias[]; };
