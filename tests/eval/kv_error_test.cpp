// eval::measure_kv_error against an independent computation: the F32 cache's keys and values
// rounded here to F16 (the compiler's _Float16) and to Q8_0 (GGML's block formula written out:
// scale = max|x| / 127 stored as F16, q = round(x / scale)), and the statistics from scratch.
#include "engine/eval/kv_error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "engine/core/error.h"
#include "engine/model/model.h"

namespace servescope::eval {
namespace {

using gguf::GgmlType;

const std::string kModels = std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/";

float round_f16(float x) { return static_cast<float>(static_cast<_Float16>(x)); }

std::vector<float> round_q8_0(const std::vector<float>& x) {
  std::vector<float> out(x.size());
  for (size_t block = 0; block < x.size(); block += 32) {
    float amax = 0.0f;
    for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::abs(x[block + i]));
    const float d = amax / 127.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    for (size_t i = 0; i < 32; ++i) {
      out[block + i] = std::round(x[block + i] * inverse) * round_f16(d);
    }
  }
  return out;
}

struct Stats {
  double rmse = 0.0, max_abs = 0.0, sqnr_db = 0.0;
};

Stats stats(const std::vector<float>& exact, const std::vector<float>& approx) {
  double signal = 0.0, noise = 0.0, max_abs = 0.0;
  for (size_t i = 0; i < exact.size(); ++i) {
    const double e = double(approx[i]) - double(exact[i]);
    signal += double(exact[i]) * exact[i];
    noise += e * e;
    max_abs = std::max(max_abs, std::abs(e));
  }
  return {std::sqrt(noise / double(exact.size())), max_abs, 10.0 * std::log10(signal / noise)};
}

// The F32 cache's keys (or values) of one layer after the prompt.
std::vector<float> f32_rows(model::Model& m, const std::vector<int32_t>& ids, int64_t layer,
                            bool values) {
  m.transformer->set_kv_type(GgmlType::F32);
  model::KvCache cache = m.transformer->new_cache(static_cast<int64_t>(ids.size()));
  m.transformer->forward(ids, cache);
  const std::vector<uint8_t> bytes =
      m.backend->read_kv_bytes(cache.storage.layers[static_cast<size_t>(layer)], values);
  std::vector<float> rows(ids.size() * static_cast<size_t>(m.config.kv_dim()));
  std::memcpy(rows.data(), bytes.data(), rows.size() * sizeof(float));
  return rows;
}

class KvError : public testing::TestWithParam<std::string> {};

TEST_P(KvError, MatchesAnIndependentRoundingOfTheF32Cache) {
  auto m = model::load_model(kModels + GetParam() + ".gguf", compute::BackendKind::kCpu);
  const std::vector<int32_t> ids = {1, 478, 302, 458, 479, 381, 274, 300, 431, 269, 428, 294};
  for (const GgmlType type : {GgmlType::F16, GgmlType::Q8_0}) {
    SCOPED_TRACE(gguf::type_name(type));
    const KvErrorReport report = measure_kv_error(*m->transformer, ids, type);
    EXPECT_EQ(m->transformer->kv_type(), GgmlType::F32) << "the transformer's KV type is kept";
    ASSERT_EQ(report.layers.size(), static_cast<size_t>(m->config.n_layers));
    EXPECT_EQ(report.tokens, static_cast<int64_t>(ids.size()));
    for (const KvLayerError& layer : report.layers) {
      for (const bool values : {false, true}) {
        const std::vector<float> exact = f32_rows(*m, ids, layer.layer, values);
        std::vector<float> rounded = exact;
        if (type == GgmlType::F16) {
          for (float& x : rounded) x = round_f16(x);
        } else {
          rounded = round_q8_0(exact);
        }
        const Stats expected = stats(exact, rounded);
        const TensorError& got = values ? layer.values_rounding_only : layer.keys_rounding_only;
        EXPECT_NEAR(got.rmse, expected.rmse, 1e-6 * expected.rmse) << "layer " << layer.layer;
        EXPECT_NEAR(got.max_abs_error, expected.max_abs, 1e-6 * expected.max_abs);
        EXPECT_NEAR(got.sqnr_db, expected.sqnr_db, 1e-6);
        EXPECT_EQ(got.elements, static_cast<int64_t>(exact.size()));
      }
      // Layer 0's inputs do not depend on any cache: what it stores is the rounding alone.
      // Later layers also carry the error of the layers before.
      const TensorError& stored = layer.keys;
      if (layer.layer == 0) {
        EXPECT_DOUBLE_EQ(stored.rmse, layer.keys_rounding_only.rmse);
        EXPECT_DOUBLE_EQ(layer.values.rmse, layer.values_rounding_only.rmse);
      } else {
        EXPECT_NE(stored.rmse, layer.keys_rounding_only.rmse);
      }
    }
  }
}

TEST_P(KvError, F16IsFarMorePreciseThanQ8_0) {
  auto m = model::load_model(kModels + GetParam() + ".gguf", compute::BackendKind::kCpu);
  const std::vector<int32_t> ids = {1, 300, 301, 302, 303, 304, 305, 306};
  const KvErrorReport f16 = measure_kv_error(*m->transformer, ids, GgmlType::F16);
  const KvErrorReport q8 = measure_kv_error(*m->transformer, ids, GgmlType::Q8_0);
  for (size_t l = 0; l < f16.layers.size(); ++l) {
    // F16 keeps 11 significant bits, Q8_0 about 7 relative to its block's largest value.
    EXPECT_GT(f16.layers[l].keys.sqnr_db, q8.layers[l].keys.sqnr_db + 15.0);
    EXPECT_GT(f16.layers[l].values.sqnr_db, q8.layers[l].values.sqnr_db + 15.0);
  }
}

TEST_P(KvError, RefusesF32AndPromptsBeyondTheContext) {
  auto m = model::load_model(kModels + GetParam() + ".gguf", compute::BackendKind::kCpu);
  EXPECT_THROW(measure_kv_error(*m->transformer, std::vector<int32_t>{1, 2}, GgmlType::F32),
               InputError);
  EXPECT_THROW(measure_kv_error(*m->transformer, std::vector<int32_t>{}, GgmlType::F16),
               InputError);
  const std::vector<int32_t> long_prompt(static_cast<size_t>(m->config.context_length + 1), 5);
  EXPECT_THROW(measure_kv_error(*m->transformer, long_prompt, GgmlType::F16), InputError);
}

INSTANTIATE_TEST_SUITE_P(GoldenModels, KvError, testing::Values("llama-f32", "gpt2-f32"));

}  // namespace
}  // namespace servescope::eval
