// The CPU backend's thread pool and its threaded, batched matrix products: every index covered
// once, errors carried back to the caller, and products that do not depend on the thread count
// or on how many tokens share a weight read, checked against a double-precision reference of
// the dequantised weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "engine/compute/cpu_backend.h"
#include "engine/compute/cpu_block_dot.h"
#include "engine/compute/cpu_exact_interleaved.h"
#include "engine/compute/cpu_int8_dot.h"
#include "engine/compute/cpu_int8_interleaved.h"
#include "engine/compute/cpu_panel_dot.h"
#include "engine/compute/cpu_thread_pool.h"
#include "engine/core/error.h"
#include "tests/support/random_weights.h"

namespace servescope::compute {
namespace {

using gguf::GgmlType;

// The KV panel's device memory showed "working memory 0 B" on the CPU while its lesson said
// every step needs some: the backend counts its activation memory as a device would.
TEST(CpuBackend, WorkingMemoryIsTheMostActivationMemoryHeldAtOnce) {
  CpuBackend backend(1);
  const uint64_t before = backend.working_bytes();
  {
    const Tensor a = backend.create_tensor(64, 256, BufferPurpose::kActivations);
    const Tensor b = backend.create_tensor(64, 256, BufferPurpose::kActivations);
    EXPECT_GE(backend.working_bytes(), before + 2 * 64 * 256 * sizeof(float));
  }
  const uint64_t peak = backend.working_bytes();
  {
    // Freed buffers are reused: the same shapes again hold no more.
    const Tensor a = backend.create_tensor(64, 256, BufferPurpose::kActivations);
    EXPECT_EQ(backend.working_bytes(), peak);
  }
  // Weights are not working memory.
  const Tensor w = backend.create_tensor(1024, 1024, BufferPurpose::kWeights);
  EXPECT_EQ(backend.working_bytes(), peak);
}

TEST(CpuThreadPool, CoversEveryIndexOnceForOddCountsAndGrains) {
  for (const int threads : {1, 2, 3}) {
    CpuThreadPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (const int64_t count : {1, 2, 7, 31, 257, 1001}) {
      for (const int64_t grain : {1, 3, 64}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
        std::atomic<bool> bad_thread{false};
        pool.parallel_for(count, grain, [&](int64_t begin, int64_t end, int thread) {
          if (thread < 0 || thread >= threads) bad_thread = true;
          for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)]++;
        });
        for (int64_t i = 0; i < count; ++i) {
          ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1)
              << "threads " << threads << " count " << count << " grain " << grain << " i " << i;
        }
        EXPECT_FALSE(bad_thread);
      }
    }
  }
}

TEST(CpuThreadPool, RangesAreWholeGrainsExceptTheLast) {
  CpuThreadPool pool(3);
  std::atomic<bool> split_a_grain{false};
  pool.parallel_for(1000, 16, [&](int64_t begin, int64_t end, int) {
    if (begin % 16 != 0 || (end != 1000 && end % 16 != 0)) split_a_grain = true;
  });
  EXPECT_FALSE(split_a_grain);
}

TEST(CpuThreadPool, RethrowsTheFirstErrorAfterEveryRangeFinished) {
  CpuThreadPool pool(2);
  std::atomic<int64_t> covered{0};
  EXPECT_THROW(pool.parallel_for(100, 1,
                                 [&](int64_t begin, int64_t end, int) {
                                   covered += end - begin;
                                   if (begin == 0) throw InputError("range 0 failed");
                                 }),
               InputError);
  EXPECT_EQ(covered.load(), 100);
  // The pool stays usable after an error.
  std::atomic<int64_t> sum{0};
  pool.parallel_for(100, 1, [&](int64_t begin, int64_t end, int) {
    for (int64_t i = begin; i < end; ++i) sum += i;
  });
  EXPECT_EQ(sum.load(), 4950);
}

TEST(CpuThreadPool, ManyShortJobsInARow) {
  CpuThreadPool pool(2);
  int64_t total = 0;
  for (int job = 0; job < 20000; ++job) {
    std::atomic<int64_t> sum{0};
    pool.parallel_for(8, 1, [&](int64_t begin, int64_t end, int) { sum += end - begin; });
    total += sum.load();
  }
  EXPECT_EQ(total, 20000 * 8);
}

TEST(CpuThreadPool, RejectsZeroThreads) {
  EXPECT_THROW(CpuThreadPool(0), InputError);
  EXPECT_THROW(CpuBackend(-1), InputError);
  EXPECT_GE(CpuThreadPool::default_threads(), 1);
}

using testing_support::random_weights;
using testing_support::Weights;

// Prefill's exact path dequantises weight tiles with the vector kernel: it must give what the
// reference decoder gives, bit for bit (float(q) * d is one rounding either way).
TEST(CpuDequantize, FastRowEqualsTheReferenceDecoderBitForBit) {
  for (const GgmlType type : {GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0}) {
    const Weights w = random_weights(type, 5, 320, 23);
    std::vector<float> fast(w.values.size());
    const uint64_t stride = gguf::row_bytes(type, 320);
    for (int64_t r = 0; r < 5; ++r) {
      dequantize_row_fast(type, w.bytes.data() + static_cast<uint64_t>(r) * stride,
                          fast.data() + r * 320, 320);
    }
    EXPECT_EQ(fast, w.values) << gguf::type_name(type);
  }
}

// The KV cache stores new rows with the vector conversion: it must round as the reference does,
// at every edge of half precision (ties, subnormals, overflow, infinities, NaNs), and in the
// scalar tail after the last whole vector.
TEST(CpuQuantize, FastF16RowEqualsTheReferenceEncoderBitForBit) {
  std::vector<float> values = {0.0f,
                               -0.0f,
                               1.0f,
                               -2.5f,
                               65504.0f,
                               65519.99f,
                               65520.0f,
                               -1e6f,
                               6.1035156e-05f,
                               6.0e-08f,
                               2.98e-08f,
                               1.0e-9f,
                               1.00048828125f,
                               1.00146484375f,
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN(),
                               std::bit_cast<float>(0x7F800001u),
                               std::bit_cast<float>(0xFFC12345u)};
  std::mt19937 rng(5);
  std::uniform_int_distribution<uint32_t> any_bits;
  while (values.size() < 1003) values.push_back(std::bit_cast<float>(any_bits(rng)));
  for (const int64_t n : {int64_t{1003}, int64_t{128}, int64_t{7}}) {
    std::vector<uint8_t> fast(static_cast<size_t>(2 * n));
    std::vector<uint8_t> reference(fast.size());
    quantize_row_fast(GgmlType::F16, values.data(), fast.data(), n);
    gguf::quantize_row(GgmlType::F16, values.data(), reference.data(), n);
    EXPECT_EQ(fast, reference) << n << " values";
  }
}

std::vector<float> product(int threads, GgmlType type, const Weights& w, int64_t rows, int64_t cols,
                           const std::vector<float>& x, int64_t tokens,
                           bool quantised_activations = false) {
  CpuBackend backend(threads, quantised_activations);
  const WeightMatrix matrix = backend.upload_matrix(type, rows, cols, w.bytes);
  Tensor in = backend.create_tensor(tokens, cols, BufferPurpose::kActivations);
  backend.write(in, std::span<const float>(x.data(), static_cast<size_t>(tokens * cols)));
  Tensor out = backend.create_tensor(tokens, rows, BufferPurpose::kActivations);
  backend.matmul(in, matrix, nullptr, out);
  return backend.read(out);
}

// Every result against a double-precision product of the decoded weights and `x`: float32
// summation of `cols` terms stays within a few ulps of the sum of the terms' magnitudes.
template <class X>
void expect_near_double_reference(const std::vector<float>& result, const Weights& w, int64_t rows,
                                  int64_t cols, const std::vector<X>& x, int64_t tokens) {
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t r = 0; r < rows; ++r) {
      double exact = 0.0;
      double magnitude = 0.0;
      for (int64_t c = 0; c < cols; ++c) {
        const double term = double(w.values[static_cast<size_t>(r * cols + c)]) *
                            double(x[static_cast<size_t>(t * cols + c)]);
        exact += term;
        magnitude += std::abs(term);
      }
      ASSERT_NEAR(result[static_cast<size_t>(t * rows + r)], exact, 1e-5 * magnitude + 1e-6)
          << "tokens " << tokens << " token " << t << " row " << r;
    }
  }
}

class CpuThreadedMatmul : public ::testing::TestWithParam<GgmlType> {};

// Odd row counts, a column count with a tail past the last 16 (F32/F16), and token counts on
// both sides of every group size and of the switch to dequantised tiles (32 tokens).
TEST_P(CpuThreadedMatmul, SameForOneTwoThreeThreadsAndMatchesDoubleReference) {
  const GgmlType type = GetParam();
  const bool blocks = type == GgmlType::Q8_0 || type == GgmlType::Q4_0 || type == GgmlType::Q5_0;
  const int64_t rows = 203;
  const bool super_blocks = type == GgmlType::Q4_K || type == GgmlType::Q6_K;
  const int64_t cols = super_blocks ? 512 : blocks ? 320 : 328;
  const Weights w = random_weights(type, rows, cols, 7);
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(40 * cols));
  for (float& v : x) v = normal(rng);
  for (const int64_t tokens : {1, 2, 3, 4, 5, 8, 9, 31, 32, 33, 40}) {
    const std::vector<float> one = product(1, type, w, rows, cols, x, tokens);
    for (const int threads : {2, 3}) {
      // Rows are split between threads, never a row's sum: bit-exact.
      EXPECT_EQ(product(threads, type, w, rows, cols, x, tokens), one)
          << "tokens " << tokens << " threads " << threads;
    }
    expect_near_double_reference(one, w, rows, cols, x, tokens);
  }
}

// A token's result does not depend on how many other tokens share the weight read (up to the
// BLAS switch at 32 tokens): batched decode gives each sequence what decoding it alone gives.
TEST_P(CpuThreadedMatmul, BatchedRowsEqualTheSingleTokenProduct) {
  const GgmlType type = GetParam();
  const int64_t rows = 97;
  const int64_t cols = 256;
  const Weights w = random_weights(type, rows, cols, 3);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t tokens = 32;
  std::vector<float> x(static_cast<size_t>(tokens * cols));
  for (float& v : x) v = normal(rng);
  const std::vector<float> batched = product(2, type, w, rows, cols, x, tokens);
  for (int64_t t = 0; t < tokens; ++t) {
    const std::vector<float> token(x.begin() + t * cols, x.begin() + (t + 1) * cols);
    const std::vector<float> alone = product(2, type, w, rows, cols, token, 1);
    const std::vector<float> in_batch(batched.begin() + t * rows, batched.begin() + (t + 1) * rows);
    EXPECT_EQ(in_batch, alone) << "token " << t;
  }
}

// Every instruction-set variant of the exact Q8_0 / Q4_0 row kernel this CPU runs (AVX2, and
// AVX-512 where the CPU has it; an AVX2-only CI machine still runs the first) gives the same
// sums bit for bit: lone tokens (rows in fours or pairs, then single rows) and groups of eight
// and four tokens.
TEST(CpuQuantRows, EveryKernelVariantOfThisCpuGivesTheSameSums) {
  for (const GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_0}) {
    const int64_t rows = 15;  // three groups of four rows and three single rows
    const int64_t cols = 288;
    const Weights w = random_weights(type, rows, cols, 37);
    std::mt19937 rng(41);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const std::vector<RowsDotTokens> variants = quant_rows_kernel_variants(type);
    for (const int64_t tokens : {1, 2, 3, 4, 5, 9, 13}) {
      std::vector<float> x(static_cast<size_t>(tokens * cols));
      for (float& v : x) v = normal(rng);
      std::vector<std::vector<float>> results;
      for (const RowsDotTokens kernel : variants) {
        std::vector<float> out(static_cast<size_t>(tokens * rows));
        kernel(w.bytes.data(), gguf::row_bytes(type, cols), rows, x.data(), cols, tokens, cols,
               out.data(), rows);
        expect_near_double_reference(out, w, rows, cols, x, tokens);
        results.push_back(out);
      }
      for (size_t v = 1; v < results.size(); ++v) {
        EXPECT_EQ(results[v], results[0])
            << gguf::type_name(type) << " variant " << v << " tokens " << tokens;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, CpuThreadedMatmul,
                         ::testing::Values(GgmlType::F32, GgmlType::F16, GgmlType::Q8_0,
                                           GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q4_K,
                                           GgmlType::Q6_K),
                         [](const auto& param_info) {
                           return std::string(gguf::type_name(param_info.param));
                         });

// The activations as the integer path sees them: per block of 32, d = max|x| / 127 and
// q = round(x / d), written from the formula (not through quantize_activations).
std::vector<double> activations_as_int8(const std::vector<float>& x) {
  std::vector<double> out(x.size());
  for (size_t b = 0; b < x.size(); b += 32) {
    double amax = 0.0;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::abs(double(x[b + j])));
    const float d = static_cast<float>(amax) / 127.0f;
    for (size_t j = 0; j < 32; ++j) {
      out[b + j] = d == 0.0f ? 0.0 : double(d) * std::nearbyint(x[b + j] * (1.0f / d));
    }
  }
  return out;
}

class CpuInt8Matmul : public ::testing::TestWithParam<GgmlType> {};

// Rows of whole blocks: nine of 32 (a count the kernels' groups of tokens and blocks do not
// divide), or two K-quant super-blocks of 256.
int64_t columns_for(GgmlType type) {
  return gguf::block_elements(type) == gguf::kSuperBlock ? 2 * gguf::kSuperBlock : 288;
}

TEST_P(CpuInt8Matmul, MatchesDoubleReferenceOfQuantisedActivationsForAnyThreadsAndBatch) {
  const GgmlType type = GetParam();
  const int64_t rows = 131;
  const int64_t cols = columns_for(type);
  const Weights w = random_weights(type, rows, cols, 17);
  std::mt19937 rng(19);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(40 * cols));
  for (float& v : x) v = normal(rng);
  const std::vector<double> xq = activations_as_int8(x);
  const std::vector<float> all = product(1, type, w, rows, cols, x, 40, true);
  for (const int64_t tokens : {1, 3, 4, 5, 9, 33, 40}) {
    const std::vector<float> one = product(1, type, w, rows, cols, x, tokens, true);
    EXPECT_EQ(std::vector<float>(all.begin(), all.begin() + tokens * rows), one)
        << "a token's result depends on its batch; tokens " << tokens;
    for (const int threads : {2, 3}) {
      EXPECT_EQ(product(threads, type, w, rows, cols, x, tokens, true), one)
          << "tokens " << tokens << " threads " << threads;
    }
  }
  // Integer block sums are exact; the float scaling and the sum over blocks round.
  expect_near_double_reference(all, w, rows, cols, xq, 40);
}

INSTANTIATE_TEST_SUITE_P(Types, CpuInt8Matmul,
                         ::testing::Values(GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_0,
                                           GgmlType::Q4_K, GgmlType::Q6_K),
                         [](const auto& param_info) {
                           return std::string(gguf::type_name(param_info.param));
                         });

// Interleaved Q4_0 / Q5_0 / Q8_0 / Q4_K / Q6_K (8-bit activations): every variant of this CPU gives
// the portable kernel's bits for any token count and any run of rows (whole groups, a partial last
// group), the sums are the quantised values' products, and a row read back for an embedding is the
// reference decoder's.
class CpuInterleaved : public ::testing::TestWithParam<GgmlType> {};

TEST_P(CpuInterleaved, EveryVariantGivesThePortableBitsAndRowsReadBackExactly) {
  const GgmlType type = GetParam();
  ASSERT_TRUE(has_interleaved_kernel(type));
  const int64_t rows = 37;  // two whole groups of 16 and a partial one
  const int64_t cols = columns_for(type);
  const int64_t blocks = cols / 32;
  const Weights w = random_weights(type, rows, cols, 41);
  const std::vector<uint8_t> packed = interleave_rows(type, w.bytes.data(), rows, cols);
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    interleaved_row(type, packed.data(), cols, r, row.data());
    EXPECT_TRUE(std::equal(row.begin(), row.end(), w.values.begin() + r * cols)) << "row " << r;
  }
  std::mt19937 rng(43);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const int64_t tokens : {1, 2, 3, 8, 11}) {
    std::vector<float> x(static_cast<size_t>(tokens * cols));
    for (float& v : x) v = normal(rng);
    std::vector<ActivationBlock> xq(static_cast<size_t>(tokens * blocks));
    std::vector<int32_t> offsets(xq.size());
    for (int64_t t = 0; t < tokens; ++t) {
      quantize_activations(x.data() + t * cols, cols, xq.data() + t * blocks);
    }
    for (size_t i = 0; i < xq.size(); ++i) offsets[i] = interleaved_block_offset(type, xq[i]);
    std::vector<std::vector<float>> results;
    for (const InterleavedKernel kernel : interleaved_kernel_variants(type)) {
      std::vector<float> out(static_cast<size_t>(tokens * rows), -1.0f);
      // Rows in the pieces a thread would take: the first group, then the rest.
      kernel(packed.data(), cols, 0, 16, xq.data(), offsets.data(), tokens, out.data(), rows);
      kernel(packed.data(), cols, 16, rows, xq.data(), offsets.data(), tokens, out.data(), rows);
      results.push_back(out);
    }
    for (size_t v = 1; v < results.size(); ++v) {
      EXPECT_EQ(results[v], results[0]) << "variant " << v << " tokens " << tokens;
    }
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t r = 0; r < rows; ++r) {
        double expected = 0.0;
        for (int64_t b = 0; b < blocks; ++b) {
          const ActivationBlock& xb = xq[static_cast<size_t>(t * blocks + b)];
          for (int64_t j = 0; j < 32; ++j) {
            expected += double(w.values[static_cast<size_t>(r * cols + b * 32 + j)]) *
                        double(xb.d) * double(xb.qs[j]);
          }
        }
        EXPECT_NEAR(results[0][static_cast<size_t>(t * rows + r)], expected,
                    1e-4 * (1.0 + std::abs(expected)))
            << "token " << t << " row " << r;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, CpuInterleaved,
                         ::testing::Values(GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_0,
                                           GgmlType::Q4_K, GgmlType::Q6_K),
                         [](const auto& param_info) {
                           return std::string(gguf::type_name(param_info.param));
                         });

// Interleaved Q4_0 / Q5_0 / Q8_0 / Q4_K / Q6_K against exact float activations (what an AVX-512
// CPU's exact backend runs; the portable variant runs everywhere): every variant gives the portable
// kernel's bits, a token gets the same bits alone as in any batch, the sums are the decoded
// weights' products, and a tile dequantised from the interleaved rows is the one dequantised from
// GGML's rows.
class CpuExactInterleaved : public ::testing::TestWithParam<GgmlType> {};

TEST_P(CpuExactInterleaved, EveryVariantGivesThePortableBitsAndTilesTheRowMajorValues) {
  const GgmlType type = GetParam();
  const int64_t rows = 37;  // two whole groups of 16 and a partial one
  const int64_t cols = columns_for(type);
  const Weights w = random_weights(type, rows, cols, 47);
  const std::vector<uint8_t> packed = interleave_rows(type, w.bytes.data(), rows, cols);
  std::mt19937 rng(53);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t most_tokens = 11;
  std::vector<float> x(static_cast<size_t>(most_tokens * cols));
  for (float& v : x) v = normal(rng);
  std::vector<float> prepared(static_cast<size_t>(most_tokens * exact_prepared_floats(type, cols)));
  prepare_exact_activations(type, x.data(), cols, most_tokens, cols, prepared.data());
  const auto run = [&](ExactInterleavedKernel kernel, int64_t tokens) {
    std::vector<float> out(static_cast<size_t>(tokens * rows), -1.0f);
    // Rows in the pieces a thread would take: the first group, then the rest.
    kernel(packed.data(), cols, 0, 16, prepared.data(), tokens, out.data(), rows);
    kernel(packed.data(), cols, 16, rows, prepared.data(), tokens, out.data(), rows);
    return out;
  };
  const std::vector<ExactInterleavedKernel> variants = exact_interleaved_kernel_variants(type);
  const std::vector<float> all = run(variants[0], most_tokens);
  expect_near_double_reference(all, w, rows, cols, x, most_tokens);
  for (const int64_t tokens : {1, 2, 3, 4, 5, 9, 11}) {
    for (size_t v = 0; v < variants.size(); ++v) {
      EXPECT_EQ(run(variants[v], tokens),
                std::vector<float>(all.begin(), all.begin() + tokens * rows))
          << "variant " << v << " tokens " << tokens;
    }
  }
  // A tile of rows 16..36 (a whole group and a partial one), as matmul_on_tiles takes it.
  const int64_t first = 16;
  const int64_t tile_rows = rows - first;
  const PanelLayout layout = panel_layout(GgmlType::F32, tile_rows, cols);
  std::vector<float> from_rows(layout.bytes() / sizeof(float), -1.0f);
  std::vector<float> from_interleaved(from_rows.size(), -1.0f);
  const uint64_t row_bytes = gguf::row_bytes(type, cols);
  dequantize_to_panels(type, w.bytes.data() + first * row_bytes, row_bytes, tile_rows, cols,
                       from_rows.data());
  interleaved_to_panels(type, packed.data(), cols, first, tile_rows, from_interleaved.data());
  for (int64_t r = 0; r < tile_rows; ++r) {  // the padding rows past the tile may differ in sign
    for (int64_t c = 0; c < cols; ++c) {
      const uint64_t at =
          layout.block_offset(r / kPanelBlockRows) / sizeof(float) +
          static_cast<uint64_t>(c * layout.block_width(r / kPanelBlockRows) + r % kPanelBlockRows);
      ASSERT_EQ(from_interleaved[at], from_rows[at]) << "row " << first + r << " column " << c;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, CpuExactInterleaved,
                         ::testing::Values(GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_0,
                                           GgmlType::Q4_K, GgmlType::Q6_K),
                         [](const auto& param_info) {
                           return std::string(gguf::type_name(param_info.param));
                         });

}  // namespace
}  // namespace servescope::compute
