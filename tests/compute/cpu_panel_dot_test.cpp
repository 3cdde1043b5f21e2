// F32 / F16 weights in panels (cpu_panel_dot.h): the layout keeps every value, and every
// instruction-set variant of the panel product gives each (row, token) exactly the bits of one
// chain of fused multiply-adds over the columns in order, alone or in any batch, over any split
// of the rows (the thread pool's chunks).
#include "engine/compute/cpu_panel_dot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "engine/compute/cpu_backend.h"
#include "tests/support/random_weights.h"

namespace servescope::compute {
namespace {

using gguf::GgmlType;

using testing_support::random_weights;
using testing_support::Weights;

std::vector<float> random_tokens(int64_t tokens, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(tokens * cols));
  for (float& v : x) v = normal(rng);
  return x;
}

class PanelDot : public ::testing::TestWithParam<GgmlType> {};

TEST_P(PanelDot, PackedRowsReadBackAsTheFileRows) {
  const GgmlType type = GetParam();
  for (const int64_t rows : {1, 15, 16, 17, 64, 65, 131}) {
    for (const int64_t cols : {1, 3, 17, 40}) {
      const Weights w = random_weights(type, rows, cols, 3);
      const std::vector<uint8_t> packed = pack_panels(type, rows, cols, w.bytes.data());
      EXPECT_EQ(packed.size(), panel_layout(type, rows, cols).bytes());
      std::vector<float> row(static_cast<size_t>(cols));
      for (int64_t r = 0; r < rows; ++r) {
        panel_row(type, packed.data(), rows, cols, r, row.data());
        ASSERT_EQ(
            row, std::vector<float>(w.values.begin() + r * cols, w.values.begin() + (r + 1) * cols))
            << "rows " << rows << " cols " << cols << " row " << r;
      }
    }
  }
}

// The reference: per (row, token), acc = fma(w[c], x[c], acc) for c = 0 .. cols-1 from 0.
std::vector<float> fma_chains(const Weights& w, int64_t rows, int64_t cols,
                              const std::vector<float>& x, int64_t tokens) {
  std::vector<float> out(static_cast<size_t>(tokens * rows));
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t r = 0; r < rows; ++r) {
      float acc = 0.0f;
      for (int64_t c = 0; c < cols; ++c) {
        acc = std::fma(w.values[static_cast<size_t>(r * cols + c)],
                       x[static_cast<size_t>(t * cols + c)], acc);
      }
      out[static_cast<size_t>(t * rows + r)] = acc;
    }
  }
  return out;
}

// Odd shapes: rows short of a panel, of a block, and past a block; columns not a multiple of
// any vector width; every token count from a lone token to past the largest group.
TEST_P(PanelDot, EveryVariantGivesEachTokenTheBitsOfItsFmaChainInAnyBatchAndSplit) {
  const GgmlType type = GetParam();
  constexpr int64_t kMaxTokens = 33;
  const std::vector<PanelKernel> variants = panel_kernel_variants(type);
  ASSERT_FALSE(variants.empty());
  for (const auto& [rows, cols] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 5}, {17, 33}, {70, 100}, {131, 19}}) {
    const Weights w = random_weights(type, rows, cols, 7);
    const std::vector<uint8_t> packed = pack_panels(type, rows, cols, w.bytes.data());
    const std::vector<float> x = random_tokens(kMaxTokens, cols, 11);
    const std::vector<float> expected = fma_chains(w, rows, cols, x, kMaxTokens);
    const int64_t panels = panel_layout(type, rows, cols).panels();
    for (size_t v = 0; v < variants.size(); ++v) {
      for (int64_t tokens = 1; tokens <= kMaxTokens; ++tokens) {
        const std::vector<float> want(expected.begin(), expected.begin() + tokens * rows);
        std::vector<float> out(static_cast<size_t>(tokens * rows), NAN);
        variants[v](packed.data(), rows, cols, 0, panels, x.data(), cols, tokens, out.data(), rows);
        ASSERT_EQ(out, want) << "variant " << v << " rows " << rows << " cols " << cols
                             << " tokens " << tokens;
        // Split the panels in two at a point that moves with the token count (as threads do).
        const int64_t split = tokens % (panels + 1);
        std::fill(out.begin(), out.end(), NAN);
        variants[v](packed.data(), rows, cols, 0, split, x.data(), cols, tokens, out.data(), rows);
        variants[v](packed.data(), rows, cols, split, panels, x.data(), cols, tokens, out.data(),
                    rows);
        ASSERT_EQ(out, want) << "variant " << v << " rows " << rows << " cols " << cols
                             << " tokens " << tokens << " split at panel " << split;
      }
    }
  }
}

// The backend's product over panels and its embedding look-up read the repacked matrix.
TEST_P(PanelDot, BackendLooksUpEmbeddingRowsFromPanels) {
  const GgmlType type = GetParam();
  const int64_t rows = 70;
  const int64_t cols = 24;
  const Weights w = random_weights(type, rows, cols, 5);
  CpuBackend backend(2);
  const WeightMatrix table = backend.upload_matrix(type, rows, cols, w.bytes);
  const std::vector<int32_t> ids{0, 69, 17, 64, 15, 16};
  Tensor out =
      backend.create_tensor(static_cast<int64_t>(ids.size()), cols, BufferPurpose::kActivations);
  backend.embed(table, ids, out);
  const std::vector<float> got = backend.read(out);
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(std::vector<float>(got.begin() + static_cast<int64_t>(i) * cols,
                                 got.begin() + static_cast<int64_t>(i + 1) * cols),
              std::vector<float>(w.values.begin() + ids[i] * cols,
                                 w.values.begin() + (ids[i] + 1) * cols))
        << "id " << ids[i];
  }
}

// Prefill's exact products dequantise tiles of block-type rows straight into F32 panels: every
// row reads back as the reference decoder's values, for row counts that end inside a panel or
// a block, and column counts that end inside the 256-column passes and inside 16 columns.
TEST(PanelTiles, DequantisedRowsReadBackAsTheDecodedFileRows) {
  for (const GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_1, GgmlType::Q4_K,
                              GgmlType::Q6_K, GgmlType::BF16, GgmlType::F32}) {
    const int64_t block = gguf::block_elements(type);
    for (const int64_t rows : {1, 16, 17, 70, 131}) {
      for (const int64_t cols : {block, 3 * block, 256 + block, 2 * 256 + 5 * block}) {
        if (cols % block != 0 || (block == 1 && cols == 1)) continue;
        const Weights w = random_weights(type, rows, cols, 9);
        const PanelLayout layout = panel_layout(GgmlType::F32, rows, cols);
        // Filled with a marker first: padding rows must come out zero.
        std::vector<float> panels(layout.bytes() / sizeof(float), -7.0f);
        dequantize_to_panels(type, w.bytes.data(), gguf::row_bytes(type, cols), rows, cols,
                             panels.data());
        const auto* packed = reinterpret_cast<const uint8_t*>(panels.data());
        std::vector<float> row(static_cast<size_t>(cols));
        for (int64_t r = 0; r < rows; ++r) {
          panel_row(GgmlType::F32, packed, rows, cols, r, row.data());
          ASSERT_EQ(row, std::vector<float>(w.values.begin() + r * cols,
                                            w.values.begin() + (r + 1) * cols))
              << gguf::type_name(type) << " rows " << rows << " cols " << cols << " row " << r;
        }
        const int64_t padded = (rows + kPanelRows - 1) / kPanelRows * kPanelRows;
        for (int64_t r = rows; r < padded; ++r) {
          panel_row(GgmlType::F32, packed, padded, cols, r, row.data());
          ASSERT_EQ(row, std::vector<float>(static_cast<size_t>(cols), 0.0f))
              << gguf::type_name(type) << " padding row " << r;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, PanelDot, ::testing::Values(GgmlType::F32, GgmlType::F16),
                         [](const auto& param_info) {
                           return std::string(gguf::type_name(param_info.param));
                         });

}  // namespace
}  // namespace servescope::compute
