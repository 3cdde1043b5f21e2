// Random weight matrices for the CPU kernels' tests: the bytes as a GGUF file stores them
// (row-major, quantised per row) and the float values those bytes decode to.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "engine/gguf/ggml_types.h"

namespace servescope::testing_support {

struct Weights {
  std::vector<uint8_t> bytes;
  std::vector<float> values;
};

inline Weights random_weights(gguf::GgmlType type, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> source(static_cast<size_t>(rows * cols));
  for (float& v : source) v = normal(rng);
  Weights w;
  const uint64_t stride = gguf::row_bytes(type, cols);
  w.bytes.resize(stride * static_cast<uint64_t>(rows));
  w.values.resize(source.size());
  for (int64_t r = 0; r < rows; ++r) {
    gguf::quantize_row(type, source.data() + r * cols, w.bytes.data() + r * stride, cols);
    gguf::dequantize_row(type, w.bytes.data() + r * stride, w.values.data() + r * cols, cols);
  }
  return w;
}

}  // namespace servescope::testing_support
