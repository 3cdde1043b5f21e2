#version 450
// out = silu(gate) * up (SwiGLU). out may be the gate itself. Compiled with GELU as gelu_mul:
// out = gelu(gate) * up, GELU in its tanh form (GeGLU), tanh written out as in gelu.comp.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Gate { float gate[]; };
layout(std430, binding = 1) readonly buffer Up { float up[]; };
layout(std430, binding = 2) writeonly buffer Out { float out_data[]; };

layout(push_constant) uniform Push {
  uint rows;
  uint cols;
  uint gate_offset;
  uint gate_stride;
  uint up_offset;
  uint up_stride;
  uint out_offset;
  uint out_stride;
} p;

void main() {
  const uint c = gl_GlobalInvocationID.x;
  if (c >= p.cols) return;
  // Workgroup y walks rows y, y + groups, ...: a CPU device gets fewer groups than rows (each
  // costs lavapipe more than its 64 elements), a GPU one per row.
  for (uint r = gl_WorkGroupID.y; r < p.rows; r += gl_NumWorkGroups.y) {
    const float g = gate[p.gate_offset + r * p.gate_stride + c];
    const float u = up[p.up_offset + r * p.up_stride + c];
#if defined(GELU)
    const float z = clamp(0.7978845608028654 * (g + 0.044715 * g * g * g), -10.0, 10.0);
    const float e = exp(2.0 * z);
    out_data[p.out_offset + r * p.out_stride + c] = 0.5 * g * (1.0 + (e - 1.0) / (e + 1.0)) * u;
#else
    out_data[p.out_offset + r * p.out_stride + c] = g / (1.0 + exp(-g)) * u;
#endif
  }
}
