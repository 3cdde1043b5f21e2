#include "engine/eval/tensor_error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"

namespace servescope::eval {
namespace {

using gguf::GgmlType;

const std::string kData = SERVESCOPE_TEST_DATA_DIR;

TEST(TensorError, HandComputedValues) {
  const std::vector<float> original = {1, -2, 3, 0};
  const std::vector<float> quantised = {1.5f, -2, 2, 0};  // errors 0.5, 0, -1, 0
  const TensorError e =
      measure_tensor_error("t", GgmlType::Q8_0, original, quantised, {-0.5, 0.0, 0.5});
  EXPECT_EQ(e.elements, 4);
  EXPECT_DOUBLE_EQ(e.sum_squared_original, 14.0);
  EXPECT_DOUBLE_EQ(e.sum_squared_error, 1.25);
  EXPECT_DOUBLE_EQ(e.rmse, std::sqrt(1.25 / 4));
  EXPECT_DOUBLE_EQ(e.max_abs_error, 1.0);
  EXPECT_DOUBLE_EQ(e.relative_error, std::sqrt(1.25 / 14));
  EXPECT_NEAR(e.sqnr_db, 10.4921, 1e-4);  // 10 log10(14 / 1.25)
  // e < -0.5: {-1}; [-0.5, 0): {}; [0, 0.5): {0, 0}; >= 0.5: {0.5}
  EXPECT_EQ(e.histogram.counts, (std::vector<int64_t>{1, 0, 2, 1}));
}

TEST(TensorError, ExactCopyHasInfiniteSqnr) {
  const std::vector<float> x = {0.25f, -1, 7};
  const TensorError e = measure_tensor_error("t", GgmlType::F32, x, x);
  EXPECT_EQ(e.rmse, 0.0);
  EXPECT_EQ(e.relative_error, 0.0);
  EXPECT_EQ(e.sqnr_db, std::numeric_limits<double>::infinity());
  const size_t middle = default_error_bin_edges().size() / 2;  // [-1e-5, 1e-5)
  EXPECT_EQ(e.histogram.counts[middle], 3);
}

TEST(TensorError, DefaultEdgesAreSymmetricHalfDecades) {
  const std::vector<double>& edges = default_error_bin_edges();
  ASSERT_EQ(edges.size(), 18u);
  EXPECT_DOUBLE_EQ(edges.front(), -0.1);
  EXPECT_DOUBLE_EQ(edges.back(), 0.1);
  for (size_t i = 0; i < edges.size(); ++i)
    EXPECT_DOUBLE_EQ(edges[i], -edges[edges.size() - 1 - i]);
  EXPECT_TRUE(std::is_sorted(edges.begin(), edges.end()));
}

TEST(TensorError, RejectsDifferentLengths) {
  const std::vector<float> a = {1, 2}, b = {1};
  EXPECT_THROW(measure_tensor_error("t", GgmlType::F32, a, b), InputError);
}

TEST(TensorError, LayerOfName) {
  EXPECT_EQ(layer_of("blk.12.attn_q.weight"), "blk.12");
  EXPECT_EQ(layer_of("blk.0.ffn_norm.weight"), "blk.0");
  EXPECT_EQ(layer_of("token_embd.weight"), "other");
  EXPECT_EQ(layer_of("blk.x.weight"), "other");
  EXPECT_EQ(layer_of("blk."), "other");
}

TEST(TensorError, LayerSummaryPoolsSumsInNumericOrder) {
  auto make = [](std::string name, double sx, double se, int64_t n, double max_abs) {
    TensorError e;
    e.name = std::move(name);
    e.sum_squared_original = sx;
    e.sum_squared_error = se;
    e.elements = n;
    e.max_abs_error = max_abs;
    return e;
  };
  const std::vector<TensorError> tensors = {
      make("output.weight", 4, 1, 4, 0.5), make("blk.10.a", 1, 1, 1, 1),
      make("blk.2.a", 8, 1, 2, 0.25), make("blk.2.b", 2, 1, 2, 0.75)};
  const std::vector<LayerError> layers = summarize_by_layer(tensors);
  ASSERT_EQ(layers.size(), 3u);
  EXPECT_EQ(layers[0].layer, "blk.2");
  EXPECT_EQ(layers[1].layer, "blk.10");
  EXPECT_EQ(layers[2].layer, "other");
  EXPECT_EQ(layers[0].tensors, 2);
  EXPECT_EQ(layers[0].elements, 4);
  EXPECT_DOUBLE_EQ(layers[0].rmse, std::sqrt(2.0 / 4));
  EXPECT_DOUBLE_EQ(layers[0].relative_error, std::sqrt(2.0 / 10));
  EXPECT_DOUBLE_EQ(layers[0].sqnr_db, 10 * std::log10(10.0 / 2));
  EXPECT_DOUBLE_EQ(layers[0].max_abs_error, 0.75);
}

// The same statistics computed by numpy (tools/golden/make_quant_golden.py).
TEST(TensorError, MatchesTheNumpyReferenceOnTheLlamaTestModel) {
  std::ifstream in(kData + "/quant/tensor_error.json");
  ASSERT_TRUE(in);
  const auto reference = nlohmann::json::parse(in);
  EXPECT_EQ(reference["bin_edges"].get<std::vector<double>>(), default_error_bin_edges());
  const auto source = gguf::GgufFile::open(kData + "/models/llama-f32.gguf");
  for (const auto& [label, type] :
       {std::pair{"q8_0", GgmlType::Q8_0}, std::pair{"q4_0", GgmlType::Q4_0}}) {
    const std::vector<TensorError> ours = measure_quantisation_error(source, type);
    const auto& expected = reference["types"][label];
    ASSERT_EQ(ours.size(), expected.size());
    for (size_t i = 0; i < ours.size(); ++i) {
      const auto& want = expected[i];
      const TensorError& got = ours[i];
      SCOPED_TRACE(std::string(label) + " " + got.name);
      EXPECT_EQ(got.name, want["name"].get<std::string>());
      EXPECT_EQ(gguf::type_name(got.type), want["type"].get<std::string>());
      EXPECT_EQ(got.elements, want["elements"].get<int64_t>());
      EXPECT_NEAR(got.rmse, want["rmse"].get<double>(), 1e-12 + 1e-9 * got.rmse);
      EXPECT_EQ(got.max_abs_error, want["max_abs_error"].get<double>());
      EXPECT_NEAR(got.relative_error, want["relative_error"].get<double>(), 1e-9);
      if (want["sqnr_db"].is_string()) {
        EXPECT_EQ(got.sqnr_db, std::numeric_limits<double>::infinity());
      } else {
        EXPECT_NEAR(got.sqnr_db, want["sqnr_db"].get<double>(), 1e-6);
      }
      EXPECT_EQ(got.histogram.counts, want["histogram"].get<std::vector<int64_t>>());
    }
  }
}

TEST(TensorError, Q8_0IsCloserThanQ4_0OnEveryMatrix) {
  const auto source = gguf::GgufFile::open(kData + "/models/llama-f32.gguf");
  const auto q8 = measure_quantisation_error(source, GgmlType::Q8_0);
  const auto q4 = measure_quantisation_error(source, GgmlType::Q4_0);
  for (size_t i = 0; i < q8.size(); ++i) {
    if (q8[i].type == GgmlType::F32) continue;
    EXPECT_GT(q8[i].sqnr_db, q4[i].sqnr_db + 15) << q8[i].name;  // ~6 dB per bit, 4 bits more
  }
}

}  // namespace
}  // namespace servescope::eval
