// SIMD kernels for GGML's K-quant super-block types (Q2_K .. Q6_K) and the 32-element types
// their files fall back to (Q4_1, Q5_0, Q5_1): decode a block at a time into exactly the float32
// weights gguf::dequantize_row gives (same products, same roundings), in registers, then
// multiply them with float activations. A row is decoded once per product whatever the number
// of tokens, and every token's sum takes the same 64 partial sums in the same order, so it is
// the same bits alone or in any batch, and the same bits on the AVX2 and AVX-512 variants.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/compute/cpu_block_dot.h"
#include "engine/gguf/ggml_types.h"

namespace servescope::compute {

// The kernels of one type on one instruction set. Rows must be whole blocks (the GGUF loader
// checks that).
struct KQuantKernels {
  const char* isa = nullptr;  // "avx2", "avx512": for test messages
  RowDot dot = nullptr;
  RowDotTokens dot_tokens = nullptr;
  RowsDotTokens dot_rows = nullptr;
  // gguf::dequantize_row, bit for bit (prefill's weight tiles).
  void (*dequantize)(const uint8_t* row, float* dst, int64_t n) = nullptr;
};

// The best variant this CPU runs for `type` (AVX-512 over AVX2), or all null where there is none
// (another type, or a CPU without AVX2 and FMA: the caller keeps its portable path).
KQuantKernels kquant_kernels_for(gguf::GgmlType type);

// Every variant of `type` this CPU can run (AVX2, then AVX-512), so tests can compare them.
std::vector<KQuantKernels> kquant_kernel_variants(gguf::GgmlType type);


}  // namespace servescope::compute
