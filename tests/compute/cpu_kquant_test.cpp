// The K-quant kernels (Q2_K .. Q6_K, and Q4_1, Q5_0, Q5_1): their decoder against
// gguf::dequantize_row bit for bit (every scale byte pattern, random quants, the committed
// fixtures), their dot products against a double-precision product of the decoded weights, and
// the invariants of the CPU backend: the same bits on every instruction-set variant this CPU
// runs, for a token alone or in any batch, and for any thread count.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "engine/compute/cpu_backend.h"
#include "engine/compute/cpu_block_dot.h"
#include "engine/compute/cpu_int8_dot.h"
#include "engine/compute/cpu_kquant_dot.h"

namespace servescope::compute {
namespace {

using gguf::GgmlType;
constexpr int64_t kSuper = gguf::kSuperBlock;

// Where a type's fp16 super-block scales sit, and its sub-block scale bytes.
struct Layout {
  std::vector<size_t> halves;  // d (and dmin)
  size_t scales_at;
  size_t scales_bytes;
};

Layout layout_of(GgmlType type) {
  switch (type) {
    case GgmlType::Q2_K:
      return {{80, 82}, 0, 16};
    case GgmlType::Q3_K:
      return {{108}, 96, 12};
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
      return {{0, 2}, 4, 12};
    case GgmlType::Q6_K:
      return {{208}, 192, 16};
    case GgmlType::Q5_0:
      return {{0}, 0, 0};
    case GgmlType::Q4_1:
    case GgmlType::Q5_1:
      return {{0, 2}, 0, 0};
    default:
      ADD_FAILURE() << "no layout for " << gguf::type_name(type);
      return {};
  }
}

// `blocks` super-blocks of random bytes whose scale bytes take, across the blocks, every value
// (byte k of block b is (b + 37 k) mod 256; the 32-element types have none), with finite fp16
// super-block scales of any sign and size, subnormals included.
std::vector<uint8_t> every_scale_pattern(GgmlType type, int64_t blocks, uint32_t seed) {
  const Layout layout = layout_of(type);
  const auto block_bytes = static_cast<size_t>(gguf::block_bytes(type));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> half(0, 0xFFFF);
  std::vector<uint8_t> bytes(block_bytes * static_cast<size_t>(blocks));
  for (uint8_t& v : bytes) v = static_cast<uint8_t>(byte(rng));
  for (size_t b = 0; b < static_cast<size_t>(blocks); ++b) {
    uint8_t* block = bytes.data() + b * block_bytes;
    for (size_t k = 0; k < layout.scales_bytes; ++k) {
      block[layout.scales_at + k] = static_cast<uint8_t>((b + 37 * k) % 256);
    }
    for (const size_t at : layout.halves) {
      uint16_t h = 0;
      do {
        h = static_cast<uint16_t>(half(rng));
      } while ((h & 0x7C00) == 0x7C00);  // no infinities or NaNs
      std::memcpy(block + at, &h, sizeof h);
    }
  }
  return bytes;
}

std::vector<uint8_t> read_fixture(const std::string& label) {
  std::ifstream in(std::string(SERVESCOPE_TEST_DATA_DIR) + "/quant/blocks." + label,
                   std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// "q4_k" for Q4_K: the fixture's file name.
std::string fixture_label(GgmlType type) {
  std::string label(gguf::type_name(type));
  for (char& c : label) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return label;
}

std::vector<float> reference_decode(GgmlType type, const std::vector<uint8_t>& bytes) {
  const int64_t n =
      static_cast<int64_t>(bytes.size()) / gguf::block_bytes(type) * gguf::block_elements(type);
  std::vector<float> out(static_cast<size_t>(n));
  gguf::dequantize_row(type, bytes.data(), out.data(), n);
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class KQuantKernelsTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(KQuantKernelsTest, ThisCpuHasTheVariantsItReports) {
  const std::vector<KQuantKernels> variants = kquant_kernel_variants(GetParam());
  if (variants.empty()) GTEST_SKIP() << "no AVX2 and FMA: the portable kernels serve this type";
  for (const KQuantKernels& k : variants) {
    EXPECT_NE(k.dot, nullptr);
    EXPECT_NE(k.dot_tokens, nullptr);
    EXPECT_NE(k.dot_rows, nullptr);
    EXPECT_NE(k.dequantize, nullptr);
  }
  EXPECT_STREQ(kquant_kernels_for(GetParam()).isa, variants.back().isa);
}

// Every variant's decoder (prefill's weight tiles) is gguf::dequantize_row, bit for bit.
TEST_P(KQuantKernelsTest, DecoderEqualsTheReferenceBitForBit) {
  const GgmlType type = GetParam();
  const std::vector<std::vector<uint8_t>> inputs = {every_scale_pattern(type, 256, 1),
                                                    read_fixture(fixture_label(type))};
  ASSERT_FALSE(inputs[1].empty()) << "missing fixture";
  for (const std::vector<uint8_t>& bytes : inputs) {
    const std::vector<float> expected = reference_decode(type, bytes);
    const auto n = static_cast<int64_t>(expected.size());
    for (const KQuantKernels& k : kquant_kernel_variants(type)) {
      std::vector<float> got(expected.size());
      k.dequantize(bytes.data(), got.data(), n);
      EXPECT_TRUE(same_bits(got, expected)) << k.isa;
    }
    std::vector<float> fast(expected.size());
    dequantize_row_fast(type, bytes.data(), fast.data(), n);
    EXPECT_TRUE(same_bits(fast, expected)) << "dequantize_row_fast";
  }
}

// Rows of realistic weights (the quantiser's output on normal values).
struct Rows {
  std::vector<uint8_t> bytes;
  std::vector<float> values;
  uint64_t stride;
};

Rows random_rows(GgmlType type, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> source(static_cast<size_t>(rows * cols));
  for (float& v : source) v = normal(rng);
  Rows out;
  out.stride = gguf::row_bytes(type, cols);
  out.bytes.resize(out.stride * static_cast<uint64_t>(rows));
  out.values.resize(source.size());
  gguf::quantize_row(type, source.data(), out.bytes.data(), rows * cols);
  gguf::dequantize_row(type, out.bytes.data(), out.values.data(), rows * cols);
  return out;
}

std::vector<float> random_activations(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(count));
  for (float& v : x) v = normal(rng);
  return x;
}

// |result - sum_j w_j x_j| within float32 summation error of sum_j |w_j x_j|.
void expect_near_reference(float result, const float* w, const float* x, int64_t n) {
  double exact = 0.0;
  double magnitude = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    exact += double(w[j]) * double(x[j]);
    magnitude += std::abs(double(w[j]) * double(x[j]));
  }
  ASSERT_NEAR(result, exact, 1e-5 * magnitude + 1e-6);
}

// One row length of a single super-block, one longer than the kernels' decode chunk; token
// counts on both sides of the 32 tokens a pass keeps.
TEST_P(KQuantKernelsTest, EveryVariantGivesTheSameSumsAloneOrInAnyBatch) {
  const GgmlType type = GetParam();
  const std::vector<KQuantKernels> variants = kquant_kernel_variants(type);
  if (variants.empty()) GTEST_SKIP() << "no AVX2 and FMA on this CPU";
  constexpr int64_t kRows = 6;
  constexpr int64_t kTokens = 35;
  // Whole super-blocks for the K-quants; for the 32-element types, rows ending in half of the
  // 64 lanes too.
  const bool super_blocks = gguf::block_elements(type) == kSuper;
  const std::vector<int64_t> lengths = super_blocks ? std::vector<int64_t>{kSuper, 10 * kSuper}
                                                    : std::vector<int64_t>{96, 672, 2592};
  for (const int64_t n : lengths) {
    const Rows w = random_rows(type, kRows, n, 3);
    const std::vector<float> x = random_activations(kTokens * n, 4);
    std::vector<float> first_variant;
    for (const KQuantKernels& k : variants) {
      // Each (row, token) alone, through the one-token kernel.
      std::vector<float> alone(kRows * kTokens);
      for (int64_t r = 0; r < kRows; ++r) {
        for (int64_t t = 0; t < kTokens; ++t) {
          alone[static_cast<size_t>(t * kRows + r)] =
              k.dot(w.bytes.data() + r * w.stride, x.data() + t * n, n);
          expect_near_reference(alone[static_cast<size_t>(t * kRows + r)], w.values.data() + r * n,
                                x.data() + t * n, n);
        }
      }
      for (const int64_t tokens : {int64_t{1}, int64_t{2}, int64_t{5}, int64_t{32}, kTokens}) {
        std::vector<float> by_row(static_cast<size_t>(kRows * tokens));
        for (int64_t r = 0; r < kRows; ++r) {
          k.dot_tokens(w.bytes.data() + r * w.stride, x.data(), n, tokens, n, by_row.data() + r,
                       kRows);
        }
        std::vector<float> by_rows(static_cast<size_t>(kRows * tokens));
        k.dot_rows(w.bytes.data(), w.stride, kRows, x.data(), n, tokens, n, by_rows.data(), kRows);
        const std::vector<float> expected(alone.begin(), alone.begin() + kRows * tokens);
        EXPECT_TRUE(same_bits(by_row, expected)) << k.isa << " n " << n << " tokens " << tokens;
        EXPECT_TRUE(same_bits(by_rows, expected)) << k.isa << " n " << n << " tokens " << tokens;
      }
      if (first_variant.empty()) {
        first_variant = alone;
      } else {
        EXPECT_TRUE(same_bits(alone, first_variant))
            << k.isa << " differs from " << variants.front().isa << " n " << n;
      }
    }
  }
}

std::vector<float> backend_product(int threads, GgmlType type, const Rows& w, int64_t rows,
                                   int64_t cols, const std::vector<float>& x, int64_t tokens,
                                   bool int8_activations = false) {
  CpuBackend backend(threads, int8_activations);
  const WeightMatrix matrix = backend.upload_matrix(type, rows, cols, w.bytes);
  Tensor in = backend.create_tensor(tokens, cols, BufferPurpose::kActivations);
  backend.write(in, std::span<const float>(x.data(), static_cast<size_t>(tokens * cols)));
  Tensor out = backend.create_tensor(tokens, rows, BufferPurpose::kActivations);
  backend.matmul(in, matrix, nullptr, out);
  return backend.read(out);
}

// Through the backend: decode steps (row kernels) and prefill (decoded tiles) for one,
// two and three threads, near the double reference; a token in a decode batch gets its bits
// alone.
TEST_P(KQuantKernelsTest, BackendProductsAreThreadAndBatchInvariant) {
  const GgmlType type = GetParam();
  constexpr int64_t kRows = 37;
  constexpr int64_t kCols = 2 * kSuper;
  const Rows w = random_rows(type, kRows, kCols, 7);
  const std::vector<float> x = random_activations(40 * kCols, 11);
  for (const int64_t tokens : {1, 3, 32, 40}) {
    const std::vector<float> one = backend_product(1, type, w, kRows, kCols, x, tokens);
    for (const int threads : {2, 3}) {
      EXPECT_TRUE(same_bits(backend_product(threads, type, w, kRows, kCols, x, tokens), one))
          << "tokens " << tokens << " threads " << threads;
    }
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t r = 0; r < kRows; ++r) {
        expect_near_reference(one[static_cast<size_t>(t * kRows + r)], w.values.data() + r * kCols,
                              x.data() + t * kCols, kCols);
      }
    }
    if (tokens <= 32) {
      for (int64_t t = 0; t < tokens; ++t) {
        const std::vector<float> token(x.begin() + t * kCols, x.begin() + (t + 1) * kCols);
        const std::vector<float> alone = backend_product(2, type, w, kRows, kCols, token, 1);
        const std::vector<float> in_batch(one.begin() + t * kRows, one.begin() + (t + 1) * kRows);
        EXPECT_TRUE(same_bits(in_batch, alone)) << "tokens " << tokens << " token " << t;
      }
    }
  }
}

// Q4_K against 8-bit activations through the backend (interleaved rows, cpu_kquant_interleaved.h;
// its variants are held against each other in cpu_threads_test's CpuInterleaved).
TEST(KQuantInt8, BackendProductsAreThreadAndBatchInvariant) {
  const GgmlType type = GgmlType::Q4_K;
  constexpr int64_t kRows = 29;
  constexpr int64_t kCols = 2 * kSuper;
  const Rows w = random_rows(type, kRows, kCols, 31);
  const std::vector<float> x = random_activations(40 * kCols, 32);
  for (const int64_t tokens : {1, 5, 40}) {
    const std::vector<float> one = backend_product(1, type, w, kRows, kCols, x, tokens, true);
    for (const int threads : {2, 3}) {
      EXPECT_TRUE(same_bits(backend_product(threads, type, w, kRows, kCols, x, tokens, true), one))
          << "tokens " << tokens << " threads " << threads;
    }
    for (int64_t t = 0; t < tokens; ++t) {
      const std::vector<float> token(x.begin() + t * kCols, x.begin() + (t + 1) * kCols);
      const std::vector<float> alone = backend_product(2, type, w, kRows, kCols, token, 1, true);
      const std::vector<float> in_batch(one.begin() + t * kRows, one.begin() + (t + 1) * kRows);
      EXPECT_TRUE(same_bits(in_batch, alone)) << "tokens " << tokens << " token " << t;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, KQuantKernelsTest,
                         ::testing::Values(GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K,
                                           GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q4_1,
                                           GgmlType::Q5_0, GgmlType::Q5_1),
                         [](const auto& param_info) {
                           return std::string(gguf::type_name(param_info.param));
                         });

}  // namespace
}  // namespace servescope::compute
