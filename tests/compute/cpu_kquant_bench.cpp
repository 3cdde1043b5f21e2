// servescope-cpu-kquant-bench: the CPU backend's exact-float products per weight type, the
// K-quants and the 32-element types beside Q4_0 and Q8_0, on shapes every type can store (the
// bundled model's q|k|v, o and gate|up, and a down projection of 256x768). Not a test: the best
// of REPS runs of each product, summed over one layer.
//
//   servescope-cpu-kquant-bench [--threads N] [--tokens T] [--reps R] [--int8 1]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/compute/cpu_backend.h"

namespace {

using servescope::compute::BufferPurpose;
using servescope::compute::CpuBackend;
using servescope::compute::Tensor;
using servescope::compute::WeightMatrix;
using servescope::gguf::GgmlType;

struct Options {
  int threads = 1;
  int64_t tokens = 1;
  int reps = 200;
  bool int8 = false;  // --activations q8_0 (the types with an integer kernel)
};

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const long value = std::strtol(argv[i + 1], nullptr, 10);
    if (flag == "--threads") options.threads = static_cast<int>(std::max(1L, value));
    if (flag == "--tokens") options.tokens = std::max(1L, value);
    if (flag == "--reps") options.reps = static_cast<int>(std::max(1L, value));
    if (flag == "--int8") options.int8 = value != 0;
  }
  return options;
}

double best_us(CpuBackend& backend, GgmlType type, int64_t rows, int64_t cols,
               const Options& options) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> values(static_cast<size_t>(rows * cols));
  for (float& v : values) v = normal(rng);
  std::vector<uint8_t> bytes(servescope::gguf::row_bytes(type, rows * cols));
  servescope::gguf::quantize_row(type, values.data(), bytes.data(), rows * cols);
  const WeightMatrix matrix = backend.upload_matrix(type, rows, cols, bytes);
  std::vector<float> x(static_cast<size_t>(options.tokens * cols));
  for (float& v : x) v = normal(rng);
  Tensor in = backend.create_tensor(options.tokens, cols, BufferPurpose::kActivations);
  backend.write(in, std::span<const float>(x.data(), x.size()));
  Tensor out = backend.create_tensor(options.tokens, rows, BufferPurpose::kActivations);
  double best = 1e300;
  for (int i = 0; i < options.reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    backend.matmul(in, matrix, nullptr, out);
    const auto end = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::micro>(end - start).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  const int64_t shapes[][2] = {{512, 256}, {256, 256}, {1344, 256}, {256, 768}};
  std::printf("threads %d, tokens %lld, best of %d, %s activations\n", options.threads,
              static_cast<long long>(options.tokens), options.reps,
              options.int8 ? "8-bit" : "float");
  CpuBackend backend(options.threads, options.int8);
  for (const GgmlType type :
       {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q2_K,
        GgmlType::Q3_K, GgmlType::Q5_1, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    double total_us = 0.0;
    double weights = 0.0;
    for (const auto& shape : shapes) {
      total_us += best_us(backend, type, shape[0], shape[1], options);
      weights += double(shape[0] * shape[1]);
    }
    std::printf("%-5s %8.1f us per layer's products %6.2f ns per weight per token\n",
                std::string(servescope::gguf::type_name(type)).c_str(), total_us,
                total_us * 1e3 / weights / double(options.tokens));
  }
  return 0;
}
