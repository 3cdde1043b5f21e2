#version 450
// out = silu(gate) * up (SwiGLU). out may be the gate itself. Compiled with GELU as gelu_mul:
// out = gelu(gate) * up, GELU in its tanh form (GeGLU), tanh written out as in gelu.comp.
// Compiled with VEC4 (silu_mul_vec4, gelu_mul_vec4): each invocation takes 4 adjacent columns
// with 16-byte loads and stores (every offset, stride and cols a multiple of 4; the host checks),
// a quarter of the loads lavapipe runs one lane at a time.
layout(local_size_x = 64) in;
#if defined(VEC4)
#define ELEMENT vec4
#define ELEMENTS 4u
#else
#define ELEMENT float
#define ELEMENTS 1u
#endif
layout(std430, binding = 0) readonly buffer Gate { ELEMENT gate[]; };
layout(std430, binding = 1) readonly buffer Up { ELEMENT up[]; };
layout(std430, binding = 2) writeonly buffer Out { ELEMENT out_data[]; };

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
  if (c >= p.cols / ELEMENTS) return;
  // Workgroup y walks rows y, y + groups, ...: a CPU device gets fewer groups than rows (each
  // costs lavapipe more than its 64 elements), a GPU one per row.
  for (uint r = gl_WorkGroupID.y; r < p.rows; r += gl_NumWorkGroups.y) {
    const ELEMENT g = gate[(p.gate_offset + r * p.gate_stride) / ELEMENTS + c];
    const ELEMENT u = up[(p.up_offset + r * p.up_stride) / ELEMENTS + c];
    const uint at = (p.out_offset + r * p.out_stride) / ELEMENTS + c;
#if defined(GELU)
    const ELEMENT z = clamp(0.7978845608028654 * (g + 0.044715 * g * g * g), -10.0, 10.0);
    const ELEMENT e = exp(2.0 * z);
    out_data[at] = 0.5 * g * (1.0 + (e - 1.0) / (e + 1.0)) * u;
#else
    out_data[at] = g / (1.0 + exp(-g)) * u;
#endif
  }
}
