// Dot products of one weight row, kept in its GGML storage type, with a float32 vector. Decode
// multiplies every weight by a single token's activations, so reading each stored byte once
// (no dequantised copy written and read back) is what makes small-batch decode fast.
#pragma once

#include <cstdint>

#include "engine/gguf/ggml_types.h"

namespace servescope::compute {

// sum_j W[j] * x[j] over the n elements of a row stored as `type` (F32, F16, Q8_0, Q4_0).
float dot_row(gguf::GgmlType type, const uint8_t* row, const float* x, int64_t n);

}  // namespace servescope::compute
