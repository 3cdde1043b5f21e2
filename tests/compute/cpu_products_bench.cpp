// servescope-cpu-products-bench: the CPU backend's matrix products on the bundled model's layer
// shapes (q|k|v 512x256, o 256x256, gate|up 1344x256, down 256x672), per weight type and
// activation path. Not a test (timings live in benchmarks): for each configuration, the best of
// REPS runs of each product, summed over one layer, and the GFLOP/s that makes.
//
//   servescope-cpu-products-bench [--threads N] [--tokens T] [--reps R]
//   servescope-cpu-products-bench --model M.gguf [--int8 1] [--logits-all 1] [--threads N]
//                                 [--tokens T] [--reps R]
//
// With --tokens 128 it times a prefill's products, with 1 or 8 a decode step's; run two builds
// one after the other, alternating, for an A/B under the same machine load. With --model, every
// matrix of that model as stored (the output projection with one token, as a prefill computes
// only the last token's logits, or with every token, as a decode step of T sequences does:
// --logits-all 1; the token embedding is a look-up, not a product): the best
// time of each, warm in cache, summed. That is a bound, not a forecast: the tokens/s it gives
// is the most a forward pass could reach if nothing but these products took time and every
// weight came from cache. SERVESCOPE_BENCH_VERBOSE=1 prints each matrix's time.
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
#include "engine/gguf/gguf_file.h"

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
  std::string model;        // empty: the layer shapes with random weights
  bool int8 = false;        // with --model: 8-bit activations
  bool logits_all = false;  // with --model: every token's logits (a decode batch)
};

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--model") {
      options.model = argv[i + 1];
      continue;
    }
    const long value = std::strtol(argv[i + 1], nullptr, 10);
    if (flag == "--threads") options.threads = static_cast<int>(std::max(1L, value));
    if (flag == "--tokens") options.tokens = std::max(1L, value);
    if (flag == "--reps") options.reps = static_cast<int>(std::max(1L, value));
    if (flag == "--int8") options.int8 = value != 0;
    if (flag == "--logits-all") options.logits_all = value != 0;
  }
  return options;
}

// Best time in microseconds of one product of `tokens` random tokens with a [rows x cols]
// matrix stored as `type` in `bytes`.
double best_product_us(CpuBackend& backend, GgmlType type, int64_t rows, int64_t cols,
                       std::span<const uint8_t> bytes, int64_t tokens, int reps) {
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  const WeightMatrix matrix = backend.upload_matrix(type, rows, cols, bytes);
  std::vector<float> x(static_cast<size_t>(tokens * cols));
  for (float& v : x) v = normal(rng);
  Tensor in = backend.create_tensor(tokens, cols, BufferPurpose::kActivations);
  backend.write(in, std::span<const float>(x.data(), x.size()));
  Tensor out = backend.create_tensor(tokens, rows, BufferPurpose::kActivations);
  double best = 1e300;
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    backend.matmul(in, matrix, nullptr, out);
    const auto end = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::micro>(end - start).count());
  }
  return best;
}

// The same with random weights.
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
  return best_product_us(backend, type, rows, cols, bytes, options.tokens, options.reps);
}

// Every matrix of a model's forward pass (the --model mode above).
int time_model(const Options& options) {
  const auto file = servescope::gguf::GgufFile::open(options.model);
  CpuBackend backend(options.threads, options.int8);
  double total_us = 0.0;
  double multiply_adds = 0.0;
  for (const auto& tensor : file.tensors()) {
    if (tensor.shape.size() != 2 || tensor.name == "token_embd.weight") continue;
    const bool output = tensor.name == "output.weight";
    const int64_t tokens = output && !options.logits_all ? 1 : options.tokens;
    const int64_t cols = tensor.shape[0];
    const int64_t rows = tensor.shape[1];
    const double us = best_product_us(backend, tensor.type, rows, cols,
                                      std::span<const uint8_t>(tensor.data, tensor.n_bytes), tokens,
                                      options.reps);
    if (std::getenv("SERVESCOPE_BENCH_VERBOSE") != nullptr) {
      std::printf("%-24s %-5s %5lld x %5lld %9.1f us\n", tensor.name.c_str(),
                  std::string(servescope::gguf::type_name(tensor.type)).c_str(),
                  static_cast<long long>(rows), static_cast<long long>(cols), us);
    }
    total_us += us;
    multiply_adds += double(rows * cols * tokens);
  }
  std::printf("%s, %s activations, threads %d, tokens %lld, best of %d per matrix\n",
              options.model.c_str(), options.int8 ? "8-bit" : "exact float", options.threads,
              static_cast<long long>(options.tokens), options.reps);
  std::printf("%.1f us of products, %.1f GFLOP/s, at most %.0f tokens/s\n", total_us,
              2.0 * multiply_adds / total_us / 1e3, double(options.tokens) / total_us * 1e6);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  if (!options.model.empty()) return time_model(options);
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
