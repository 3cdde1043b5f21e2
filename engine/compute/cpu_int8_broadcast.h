// A token's four 8-bit activations of one group (elements 4i .. 4i + 3 of a block) in every
// 32-bit lane: the operand the interleaved integer kernels (cpu_int8_interleaved.cpp,
// cpu_kquant_interleaved.cpp) meet 16 or 8 rows' weights with in one dot.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "engine/compute/cpu_int8_dot.h"

namespace servescope::compute {

inline int32_t four_activations(const ActivationBlock& x, int group) {
  int32_t four;
  std::memcpy(&four, x.qs + 4 * group, sizeof four);
  return four;
}

__attribute__((target("avx512f"))) inline __m512i activations_of_group_512(const ActivationBlock& x,
                                                                           int group) {
  return _mm512_set1_epi32(four_activations(x, group));
}

__attribute__((target("avx2"))) inline __m256i activations_of_group_256(const ActivationBlock& x,
                                                                        int group) {
  return _mm256_set1_epi32(four_activations(x, group));
}

}  // namespace servescope::compute
#endif
