// servescope-cpu-products-bench: the CPU backend's matrix products on the bundled model's layer
// shapes (q|k|v 512x256, o 256x256, gate|up 1344x256, down 256x672), per weight type and
// activation path. Not a test (timings live in benchmarks): for each configuration, the best of
// REPS runs of each product, summed over one layer, and the GFLOP/s that makes.
//
//   servescope-cpu-products-bench [--threads N] [--tokens T] [--reps R]
//
// With --tokens 128 it times a prefill's products, with 1 or 8 a decode step's; run two builds
// one after the other, alternating, for an A/B under the same machine load.
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
  int64_t tokens = 128;
  int reps = 40;
};

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const long value = std::strtol(argv[i + 1], nullptr, 10);
    if (flag == "--threads") options.threads = static_cast<int>(std::max(1L, value));
    if (flag == "--tokens") options.tokens = std::max(1L, value);
    if (flag == "--reps") options.reps = static_cast<int>(std::max(1L, value));
  }
  return options;
}

// Best time in microseconds of one product of `tokens` random tokens with a random
// [rows x cols] matrix stored as `type`.
double best_product_us(CpuBackend& backend, GgmlType type, int64_t rows, int64_t cols,
                       const Options& options) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> values(static_cast<size_t>(rows * cols));
  for (float& v : values) v = normal(rng);
  const uint64_t stride = servescope::gguf::row_bytes(type, cols);
  std::vector<uint8_t> bytes(stride * static_cast<uint64_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    servescope::gguf::quantize_row(type, values.data() + r * cols,
                                   bytes.data() + static_cast<uint64_t>(r) * stride, cols);
  }
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
  const int64_t shapes[][2] = {{512, 256}, {256, 256}, {1344, 256}, {256, 672}};
  std::printf("threads %d, tokens %lld, best of %d\n", options.threads,
              static_cast<long long>(options.tokens), options.reps);
  for (const GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0}) {
    for (const bool int8 : {false, true}) {
      if (int8 && (type == GgmlType::F32 || type == GgmlType::F16)) continue;
      CpuBackend backend(options.threads, int8);
      double total_us = 0.0;
      double flops = 0.0;
      for (const auto& shape : shapes) {
        total_us += best_product_us(backend, type, shape[0], shape[1], options);
        flops += 2.0 * double(shape[0] * shape[1] * options.tokens);
      }
      std::printf("%-5s %-11s %8.1f us per layer's products %7.1f GFLOP/s\n",
                  std::string(servescope::gguf::type_name(type)).c_str(),
                  int8 ? "8-bit act." : "exact float", total_us, flops / total_us / 1e3);
    }
  }
  return 0;
}
