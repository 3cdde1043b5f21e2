// Samples sharing a prompt on a real model, per backend: n samples give the tokens n requests
// of their own give (greedy, and sampled with seeds seed .. seed + n - 1), the prompt is
// prefilled once, and the KV bytes saved follow the formula: (n - 1) x the prompt's blocks
// while every block is shared, (n - 1) x its full blocks once the samples have copied the
// partly filled one (copy-on-write, one copy per sample but the last).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "engine/serving/engine.h"
#include "tests/compute/vulkan_test_support.h"

namespace servescope::serving {
namespace {

const std::string kModels = std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/";

class KvEventTap final : public telemetry::Observer {
 public:
  void on_step(const telemetry::StepRecord& step) override { steps.push_back(step); }
  void on_request(const telemetry::RequestRecord& request) override { requests.push_back(request); }
  void on_kv_event(const telemetry::KvEvent& event) override { kv_events.push_back(event); }

  int64_t count(telemetry::KvEventKind kind) const {
    return std::ranges::count_if(kv_events,
                                 [&](const telemetry::KvEvent& e) { return e.kind == kind; });
  }

  std::vector<telemetry::StepRecord> steps;
  std::vector<telemetry::RequestRecord> requests;
  std::vector<telemetry::KvEvent> kv_events;
};

std::string backend_label(const testing::TestParamInfo<compute::BackendKind>& param) {
  return param.param == compute::BackendKind::kCpu ? "Cpu" : "Vulkan";
}

class SharedPromptEngine : public testing::TestWithParam<compute::BackendKind> {
 protected:
  void SetUp() override {
    if (GetParam() == compute::BackendKind::kVulkan) {
      const std::string skip = compute::vulkan::reason_to_skip_vulkan();
      if (!skip.empty()) GTEST_SKIP() << skip;
    }
    model_ = model::load_model(kModels + "llama-f32.gguf", GetParam());
    std::mt19937 rng(5);
    std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(model_->config.vocab_size - 1));
    for (int i = 0; i < kPromptTokens; ++i) request_.prompt_ids.push_back(id(rng));
    request_.max_tokens = 12;
  }

  Engine engine(telemetry::Observer* observer = nullptr) {
    return Engine(*model_->transformer, model::summarize_weights(model_->file).bytes,
                  {.max_batch_size = 4, .kv_type = gguf::GgmlType::F32, .block_size = kBlockSize},
                  observer);
  }

  // The request run on an engine of its own, with this seed.
  std::vector<int32_t> alone(uint64_t seed) {
    Engine e = engine();
    EngineRequest r = request_;
    r.sampling.seed = seed;
    const SequenceId id = e.submit(r);
    e.run_until_idle();
    return e.output_ids(id);
  }

  static constexpr int kPromptTokens = 21;  // one full block of 16 and 5 tokens in a second
  static constexpr int64_t kBlockSize = 16;
  std::unique_ptr<model::Model> model_;
  EngineRequest request_;
};

TEST_P(SharedPromptEngine, GreedySamplesGiveTheTokensOfSeparateRequestsAndSaveTheFormulasBytes) {
  KvEventTap tap;
  Engine e = engine(&tap);
  const int64_t n = 4;
  const std::vector<SequenceId> ids = e.submit_samples(request_, n);
  ASSERT_EQ(static_cast<int64_t>(ids.size()), n);

  ASSERT_TRUE(e.step());  // the prompt's prefill, and every sample's first token
  const uint64_t per_block = e.kv_usage().bytes_per_block;
  const uint64_t prompt_blocks = 2;
  EXPECT_EQ(e.kv_usage().bytes_saved_by_sharing, (n - 1) * prompt_blocks * per_block);
  EXPECT_EQ(e.kv_usage().blocks_used, 2);
  ASSERT_TRUE(e.step());  // each writes its second token: all but one copy the partial block
  EXPECT_EQ(e.kv_usage().bytes_saved_by_sharing, (n - 1) * (prompt_blocks - 1) * per_block);
  EXPECT_EQ(tap.count(telemetry::KvEventKind::kCopyOnWrite), n - 1);
  e.run_until_idle();

  EXPECT_EQ(tap.count(telemetry::KvEventKind::kFork), n - 1);
  int64_t prefill_tokens = 0;
  for (const telemetry::StepRecord& step : tap.steps) prefill_tokens += step.prefill_tokens;
  EXPECT_EQ(prefill_tokens, kPromptTokens) << "the prompt is computed once";
  const std::vector<int32_t> reference = alone(0);
  for (const SequenceId id : ids) EXPECT_EQ(e.output_ids(id), reference) << "sample " << id;
  EXPECT_EQ(e.pool().blocks_used(), 0);
}

TEST_P(SharedPromptEngine, SeededSamplesGiveTheTokensOfRequestsWithTheirSeeds) {
  request_.sampling = {.greedy = false, .temperature = 1.0f, .top_k = 0, .top_p = 0.95f, .seed = 40};
  Engine e = engine();
  const std::vector<SequenceId> ids = e.submit_samples(request_, 3);
  e.run_until_idle();
  std::vector<std::vector<int32_t>> outputs;
  for (size_t i = 0; i < ids.size(); ++i) {
    outputs.push_back(e.output_ids(ids[i]));
    EXPECT_EQ(outputs.back(), alone(40 + i)) << "sample " << i << ", seed " << 40 + i;
  }
  // Different seeds went different ways (else the test could not tell samples apart).
  EXPECT_NE(outputs[0], outputs[1]);
}

TEST_P(SharedPromptEngine, RequestRecordsCountTheSharedPromptAsCached) {
  KvEventTap tap;
  Engine e = engine(&tap);
  const std::vector<SequenceId> ids = e.submit_samples(request_, 2);
  e.run_until_idle();
  ASSERT_EQ(tap.requests.size(), 2u);
  for (const telemetry::RequestRecord& r : tap.requests) {
    EXPECT_EQ(r.output_ids.size(), 12u);
    EXPECT_EQ(r.token_times_ms.size(), 12u);
    EXPECT_GE(r.first_scheduled_ms, r.arrival_ms);
  }
  const telemetry::RequestRecord& parent = tap.requests[0].request_id == ids[0] ? tap.requests[0]
                                                                              : tap.requests[1];
  const telemetry::RequestRecord& sample = tap.requests[0].request_id == ids[1] ? tap.requests[0]
                                                                              : tap.requests[1];
  EXPECT_EQ(parent.cached_prompt_tokens, 0);
  EXPECT_EQ(sample.cached_prompt_tokens, kPromptTokens);
  // Both first tokens came from the same step's logits.
  EXPECT_DOUBLE_EQ(sample.token_times_ms.front(), parent.token_times_ms.front());
}

INSTANTIATE_TEST_SUITE_P(Cpu, SharedPromptEngine, testing::Values(compute::BackendKind::kCpu),
                         backend_label);
INSTANTIATE_TEST_SUITE_P(Vulkan, SharedPromptEngine,
                         testing::Values(compute::BackendKind::kVulkan), backend_label);

}  // namespace
}  // namespace servescope::serving
