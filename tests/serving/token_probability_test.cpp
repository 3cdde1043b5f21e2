// Token probabilities from the engine against the PyTorch reference: tools/golden/make_models.py
// stored float64 logits at every prompt position of each golden model. A request whose prompt
// is the first k prompt tokens samples at position k - 1, so its TokenRecord must hold the
// softmax of those logits, computed here independently.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/model/model.h"
#include "engine/serving/engine.h"

namespace servescope::serving {
namespace {

const std::string kModels = std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/";

struct Golden {
  std::vector<int32_t> prompt_ids;
  std::vector<std::vector<double>> logits;  // per prompt position
};

Golden read_golden(const std::string& name) {
  std::ifstream in(kModels + name + ".json");
  const auto doc = nlohmann::json::parse(in);
  return {doc["prompt_ids"].get<std::vector<int32_t>>(),
          doc["logits"].get<std::vector<std::vector<double>>>()};
}

std::vector<double> softmax(const std::vector<double>& logits, double temperature = 1.0) {
  const double top = *std::ranges::max_element(logits);
  std::vector<double> p;
  for (const double l : logits) p.push_back(std::exp((l - top) / temperature));
  const double total = std::accumulate(p.begin(), p.end(), 0.0);
  for (double& x : p) x /= total;
  return p;
}

// The sampler's distribution, from its definition: the top_k largest logits, softmax at the
// temperature, the shortest most-likely-first prefix reaching top_p, renormalised.
std::map<int32_t, double> sampling_distribution(const std::vector<double>& logits,
                                                const SamplingParams& p) {
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::ranges::stable_sort(ids, [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  ids.resize(static_cast<size_t>(p.top_k));
  std::vector<double> kept;
  for (const int32_t id : ids) kept.push_back(logits[id]);
  const std::vector<double> probs = softmax(kept, p.temperature);
  std::map<int32_t, double> nucleus;
  double cumulative = 0.0;
  for (size_t i = 0; i < ids.size() && cumulative < p.top_p; ++i) {
    nucleus[ids[i]] = probs[i];
    cumulative += probs[i];
  }
  for (auto& [id, prob] : nucleus) prob /= cumulative;
  return nucleus;
}

class TokenCollector final : public telemetry::Observer {
 public:
  void on_step(const telemetry::StepRecord& /*step*/) override {}
  void on_request(const telemetry::RequestRecord& /*request*/) override {}
  void on_kv_event(const telemetry::KvEvent& /*event*/) override {}
  void on_token(const telemetry::TokenRecord& token) override {
    tokens[token.request_id] = token;
    ++count;
  }

  std::map<int64_t, telemetry::TokenRecord> tokens;  // the last one of each request
  int64_t count = 0;
};

// Every prompt prefix as its own request, all batched together; one TokenRecord each.
std::vector<telemetry::TokenRecord> prefix_tokens(model::Model& m, const Golden& golden,
                                                  const SamplingParams& sampling, int64_t top) {
  TokenCollector collector;
  Engine engine(*m.transformer, 0, {.max_batch_size = 16, .kv_type = gguf::GgmlType::F32},
                &collector);
  for (size_t k = 1; k <= golden.prompt_ids.size(); ++k) {
    EngineRequest r;
    r.prompt_ids.assign(golden.prompt_ids.begin(), golden.prompt_ids.begin() + k);
    r.max_tokens = 1;
    r.sampling = sampling;
    r.top_k_alternatives = top;
    engine.submit(r);
  }
  engine.run_until_idle();
  std::vector<telemetry::TokenRecord> tokens;
  for (const auto& [id, token] : collector.tokens) tokens.push_back(token);
  EXPECT_EQ(tokens.size(), golden.prompt_ids.size());
  return tokens;
}

// The logits agree with PyTorch to 1e-3, so probabilities agree to about 1e-3 relative.
double tolerance(double p) { return 2e-3 * p + 1e-7; }

class TokenProbabilities : public testing::TestWithParam<std::string> {};

TEST_P(TokenProbabilities, MatchTheSoftmaxOfTheReferenceLogits) {
  const Golden golden = read_golden(GetParam());
  auto m = model::load_model(kModels + GetParam() + ".gguf", compute::BackendKind::kCpu);
  constexpr int64_t kTop = 5;
  const std::vector<telemetry::TokenRecord> tokens = prefix_tokens(*m, golden, {}, kTop);
  for (size_t pos = 0; pos < tokens.size(); ++pos) {
    const telemetry::TokenRecord& t = tokens[pos];
    const std::vector<double> ref = softmax(golden.logits[pos]);
    const auto best = static_cast<int32_t>(std::ranges::max_element(ref) - ref.begin());
    EXPECT_EQ(t.id, best) << "position " << pos;
    EXPECT_EQ(t.position, static_cast<int64_t>(pos) + 1);
    EXPECT_EQ(t.output_index, 0);
    EXPECT_NEAR(t.prob, ref[t.id], tolerance(ref[t.id])) << "position " << pos;
    EXPECT_EQ(t.sampling_prob, 1.0);  // greedy
    ASSERT_EQ(t.top.size(), static_cast<size_t>(kTop));
    EXPECT_EQ(t.top[0].id, t.id);
    double lowest_listed = 1.0;
    for (const telemetry::TokenAlternative& a : t.top) {
      EXPECT_NEAR(a.prob, ref[a.id], tolerance(ref[a.id])) << "position " << pos << " id " << a.id;
      lowest_listed = std::min(lowest_listed, ref[a.id]);
    }
    for (size_t i = 1; i < t.top.size(); ++i) EXPECT_LE(t.top[i].prob, t.top[i - 1].prob);
    // Nothing left out is more likely than what is listed (up to the logits' tolerance).
    for (size_t id = 0; id < ref.size(); ++id) {
      const bool listed = std::ranges::any_of(
          t.top, [&](const auto& a) { return a.id == static_cast<int32_t>(id); });
      if (!listed) {
        EXPECT_LE(ref[id], lowest_listed + tolerance(lowest_listed)) << "id " << id;
      }
    }
  }
}

TEST_P(TokenProbabilities, SamplingProbabilityIsTheTruncatedTemperedSoftmax) {
  const Golden golden = read_golden(GetParam());
  auto m = model::load_model(kModels + GetParam() + ".gguf", compute::BackendKind::kCpu);
  for (const SamplingParams& p :
       {SamplingParams{.greedy = false, .temperature = 0.7f, .top_k = 8, .top_p = 0.9f, .seed = 1},
        SamplingParams{
            .greedy = false, .temperature = 1.5f, .top_k = 40, .top_p = 0.6f, .seed = 2}}) {
    const std::vector<telemetry::TokenRecord> tokens = prefix_tokens(*m, golden, p, 0);
    for (size_t pos = 0; pos < tokens.size(); ++pos) {
      const telemetry::TokenRecord& t = tokens[pos];
      const std::map<int32_t, double> nucleus = sampling_distribution(golden.logits[pos], p);
      ASSERT_TRUE(nucleus.contains(t.id)) << "position " << pos << ": outside the nucleus";
      const double expected = nucleus.at(t.id);
      EXPECT_NEAR(t.sampling_prob, expected, 5e-3 * expected) << "position " << pos;
      EXPECT_NEAR(t.prob, softmax(golden.logits[pos])[t.id], tolerance(t.prob));
      EXPECT_TRUE(t.top.empty());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Golden, TokenProbabilities,
                         testing::Values("llama-f32", "llama-f16", "llama-q8_0", "llama-q4_0",
                                         "llama-tied-f32", "gpt2-f32", "gpt2-f16", "gpt2-q8_0",
                                         "gpt2-q4_0"),
                         [](const auto& param) {
                           std::string name = param.param;
                           std::ranges::replace(name, '-', '_');
                           return name;
                         });

// Off unless asked: no TokenRecord for a request that did not set top_k_alternatives.
TEST(TokenProbabilitiesOff, NoRecordsUnlessAsked) {
  auto m = model::load_model(kModels + "llama-f32.gguf", compute::BackendKind::kCpu);
  TokenCollector collector;
  Engine engine(*m->transformer, 0, {.kv_type = gguf::GgmlType::F32}, &collector);
  EngineRequest quiet;
  quiet.prompt_ids = {1, 2, 3};
  quiet.max_tokens = 4;
  engine.submit(quiet);
  EngineRequest asking = quiet;
  asking.top_k_alternatives = 2;
  const SequenceId id = engine.submit(asking);
  engine.run_until_idle();
  EXPECT_EQ(collector.count, 4);  // the asking request's tokens only
  ASSERT_EQ(collector.tokens.size(), 1u);
  EXPECT_EQ(collector.tokens.begin()->first, id);
  EXPECT_EQ(collector.tokens.begin()->second.output_index, 3);
  EXPECT_EQ(collector.tokens.begin()->second.top.size(), 2u);
  EngineRequest bad = quiet;
  bad.top_k_alternatives = -1;
  EXPECT_THROW(engine.submit(bad), InputError);
}

}  // namespace
}  // namespace servescope::serving
