// One 32-column slice of a K-quant product, shared by matmul_vec and matmul_lanes. The includer
// defines KSLICE_TOKENS / KSLICE_MAX_TOKENS (tokens per invocation, and the array bound), has
// acc[kMaxRows][KSLICE_MAX_TOKENS] and kRows, and defines
//   vec4 slice_x(uint t, uint c): columns 4c .. 4c+3 of the current slice of token t's x.
// Each row's slice is decoded once (to GGML's d * scale * q) and serves every token; the mins
// come off once per 16-element half: acc -= (dmin * min) * sum(x).

KSuper supers[kMaxRows];  // each row's current super-block, loaded at its first slice

void multiply_kslice(uint rows_of[kMaxRows], uint slice) {
  const uint slices_per_row = p.cols / 32u;
  if (slice % 8u == 0u) {  // the same for every invocation
    [[unroll]] for (uint i = 0u; i < kRows; ++i) {
      supers[i] = load_ksuper(rows_of[i] * (p.cols / 256u) + slice / 8u, p.rows, p.cols);
    }
  }
  KSlice q[kMaxRows];
  vec4 factors[kMaxRows];
  [[unroll]] for (uint i = 0u; i < kRows; ++i) {
    q[i] = load_kslice(rows_of[i] * slices_per_row + slice, p.rows, p.cols);
    factors[i] = slice_factors(supers[i], slice % 8u);
  }
  float x_sums[2][KSLICE_MAX_TOKENS];  // per half: sum of x (the mins' share)
  [[unroll]] for (uint h = 0u; h < 2u; ++h) {
    [[unroll]] for (uint t = 0u; t < KSLICE_TOKENS; ++t) x_sums[h][t] = 0.0;
  }
  [[unroll]] for (uint c = 0u; c < 8u; ++c) {
    const uint h = c / 4u;  // elements 4c .. 4c+3 lie in the first half for c < 4
    vec4 w[kMaxRows];       // (d * scale) * q: GGML's dequantised weights, less the min
    [[unroll]] for (uint i = 0u; i < kRows; ++i) {
      w[i] = (h == 0u ? factors[i].x : factors[i].z) * kslice_quad(q[i], c);
    }
    [[unroll]] for (uint t = 0u; t < KSLICE_TOKENS; ++t) {
      const vec4 xv = slice_x(t, c);
#if defined(WEIGHT_KMIN)
      x_sums[h][t] += dot(xv, vec4(1.0));
#endif
      [[unroll]] for (uint i = 0u; i < kRows; ++i) acc[i][t] += dot(w[i], xv);
    }
  }
#if defined(WEIGHT_KMIN)
  [[unroll]] for (uint i = 0u; i < kRows; ++i) {
    [[unroll]] for (uint t = 0u; t < KSLICE_TOKENS; ++t) {
      acc[i][t] -= factors[i].y * x_sums[0][t] + factors[i].w * x_sums[1][t];
    }
  }
#endif
}
