// One 32-column slice of a K-quant product, shared by matmul_vec and matmul_lanes. The includer
// defines KSLICE_TOKENS / KSLICE_MAX_TOKENS (tokens per invocation, and the array bound), has
// acc[kMaxRows][KSLICE_MAX_TOKENS] and kRows, and defines
//   vec4 slice_x(uint t, uint c): columns 4c .. 4c+3 of the current slice of token t's x.
// Each row's slice is decoded once and serves every token; per part of the slice with its own
// scale: acc += (d * scale) * sum(q * x) - (dmin * min) * sum(x).

// Parts of a slice with their own scale (and min): 2 halves of 16, or (Q4_K, Q5_K) 1.
#if defined(WEIGHT_Q4_K) || defined(WEIGHT_Q5_K)
const uint kSliceParts = 1u;
#else
const uint kSliceParts = 2u;
#endif

// Slice `slice` (of the row) of each row; supers: the rows' super-blocks that hold it
// (load_ksuper, once per 8 slices).
void multiply_kslice(uint rows_of[kMaxRows], KSuper supers[kMaxRows], uint slice) {
  const uint slices_per_row = p.cols / 32u;
  KSlice q[kMaxRows];
  vec4 factors[kMaxRows];
  [[unroll]] for (uint i = 0u; i < kRows; ++i) {
    q[i] = load_kslice(rows_of[i] * slices_per_row + slice, p.rows, p.cols);
    factors[i] = slice_factors(supers[i], slice % 8u);
  }
  float sums[kSliceParts][kMaxRows][KSLICE_MAX_TOKENS];  // per part: sum of q * x
  float x_sums[kSliceParts][KSLICE_MAX_TOKENS];           // per part: sum of x (the mins' share)
  [[unroll]] for (uint h = 0u; h < kSliceParts; ++h) {
    [[unroll]] for (uint t = 0u; t < KSLICE_TOKENS; ++t) {
      x_sums[h][t] = 0.0;
      [[unroll]] for (uint i = 0u; i < kRows; ++i) sums[h][i][t] = 0.0;
    }
  }
  [[unroll]] for (uint c = 0u; c < 8u; ++c) {
    const uint h = c * kSliceParts / 8u;  // elements 4c .. 4c+3 lie in part h
    vec4 w[kMaxRows];
    [[unroll]] for (uint i = 0u; i < kRows; ++i) w[i] = kslice_quad(q[i], c);
    [[unroll]] for (uint t = 0u; t < KSLICE_TOKENS; ++t) {
      const vec4 xv = slice_x(t, c);
#if defined(WEIGHT_KMIN)
      x_sums[h][t] += dot(xv, vec4(1.0));
#endif
      [[unroll]] for (uint i = 0u; i < kRows; ++i) sums[h][i][t] += dot(w[i], xv);
    }
  }
  [[unroll]] for (uint i = 0u; i < kRows; ++i) {
    [[unroll]] for (uint h = 0u; h < kSliceParts; ++h) {
      const vec2 f = h == 0u ? factors[i].xy : factors[i].zw;
      [[unroll]] for (uint t = 0u; t < KSLICE_TOKENS; ++t) {
        acc[i][t] += f.x * sums[h][i][t];
#if defined(WEIGHT_KMIN)
        acc[i][t] -= f.y * x_sums[h][t];
#endif
      }
    }
  }
}
