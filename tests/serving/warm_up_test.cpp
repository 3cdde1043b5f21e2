// The untimed kernel warm-up: it runs the serving shapes without reporting anything, an engine
// that was not warmed marks its first step cold, and after a warm-up the first prefill the user
// sees is as fast as the ones after it (the bundled model on the CPU) and, on a Vulkan device
// (lavapipe compiles its pipelines on first use), nothing is compiled after it.
#include "engine/serving/warm_up.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "engine/telemetry/observer.h"
#include "engine/compute/vulkan/vulkan_backend.h"
#include "tests/compute/vulkan_test_support.h"

namespace servescope::serving {
namespace {

const std::string kModels = std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/";

class StepCollector final : public telemetry::Observer {
 public:
  void on_step(const telemetry::StepRecord& step) override { steps.push_back(step); }
  void on_request(const telemetry::RequestRecord& /*request*/) override {}
  void on_kv_event(const telemetry::KvEvent& /*event*/) override { ++kv_events; }

  std::vector<telemetry::StepRecord> steps;
  int64_t kv_events = 0;
};

EngineRequest request_of(int64_t prompt_length, int32_t first_id, int64_t vocab) {
  EngineRequest r;
  for (int64_t i = 0; i < prompt_length; ++i) {
    r.prompt_ids.push_back(static_cast<int32_t>((first_id + 13 * i) % vocab));
  }
  r.max_tokens = 2;
  return r;
}

uint64_t weight_bytes(const model::Model& m) { return model::summarize_weights(m.file).bytes; }

TEST(WarmUp, RunsPrefillAndDecodeShapesWithoutReporting) {
  const auto m = model::load_model(kModels + "llama-f32.gguf", compute::BackendKind::kCpu);
  const WarmUpResult result = warm_up(*m->transformer, weight_bytes(*m), EngineConfig{});
  // A long prefill and two decodes alone, then a batch of two short prefills and two decodes.
  EXPECT_EQ(result.steps, 6);
  EXPECT_GT(result.wall_ms, 0.0);

  // The engine built afterwards starts from nothing: its first record is its own first step.
  StepCollector collector;
  Engine engine(*m->transformer, weight_bytes(*m), EngineConfig{.warmed_up = true}, &collector);
  engine.submit(request_of(7, 3, m->config.vocab_size));
  engine.run_until_idle();
  ASSERT_FALSE(collector.steps.empty());
  EXPECT_EQ(collector.steps.front().step_index, 0);
  EXPECT_EQ(collector.steps.front().prefill_tokens, 7);
  for (const telemetry::StepRecord& step : collector.steps) EXPECT_FALSE(step.cold);
}

TEST(WarmUp, AnEngineThatWasNotWarmedMarksItsFirstStepCold) {
  const auto m = model::load_model(kModels + "llama-f32.gguf", compute::BackendKind::kCpu);
  StepCollector collector;
  Engine engine(*m->transformer, weight_bytes(*m), EngineConfig{}, &collector);
  engine.submit(request_of(7, 3, m->config.vocab_size));
  engine.run_until_idle();
  ASSERT_GE(collector.steps.size(), 2u);
  EXPECT_TRUE(collector.steps[0].cold);
  for (size_t i = 1; i < collector.steps.size(); ++i) EXPECT_FALSE(collector.steps[i].cold);
}

TEST(WarmUp, FitsAModelWithAShortContext) {
  const auto m = model::load_model(kModels + "llama-f32.gguf", compute::BackendKind::kCpu);
  EXPECT_NO_THROW(warm_up(*m->transformer, weight_bytes(*m), EngineConfig{.block_size = 4}));
}

// The first prefill after loading against the median of the next ones of the same length
// (other prompt ids, so no prefix is reused): issue 24's criterion, kept as a guard. On this
// CPU backend the first prefill measured no slower without the warm-up either (0.91x), so the
// test that fails without the fix is the Vulkan pipeline count below. One sample of a noisy
// machine can be slow for reasons of its own, so a fresh load gets three tries.
double first_prefill_over_median(compute::BackendKind kind) {
  const auto m = model::load_model(SERVESCOPE_BUNDLED_MODEL, kind);
  EngineConfig config;
  config.max_batch_size = 1;
  warm_up(*m->transformer, weight_bytes(*m), config);
  config.warmed_up = true;
  StepCollector collector;
  Engine engine(*m->transformer, weight_bytes(*m), config, &collector);
  std::vector<double> prefill_ms;
  for (int32_t run = 0; run < 6; ++run) {
    collector.steps.clear();
    EngineRequest r = request_of(85, 100 + 17 * run, m->config.vocab_size);
    r.max_tokens = 1;
    engine.submit(r);
    engine.run_until_idle();
    prefill_ms.push_back(collector.steps.at(0).wall_ms);
  }
  std::vector<double> later(prefill_ms.begin() + 1, prefill_ms.end());
  std::nth_element(later.begin(), later.begin() + later.size() / 2, later.end());
  return prefill_ms.front() / later[later.size() / 2];
}

void expect_first_prefill_warm(compute::BackendKind kind) {
  double best = 1e9;
  for (int attempt = 0; attempt < 3 && best > 1.5; ++attempt) {
    best = std::min(best, first_prefill_over_median(kind));
  }
  EXPECT_LE(best, 1.5) << "the first prefill took " << best << "x the median of later ones";
}

TEST(WarmUp, FirstPrefillOnTheCpuIsWithinOneAndAHalfOfLaterOnes) {
  expect_first_prefill_warm(compute::BackendKind::kCpu);
}

// lavapipe compiles a pipeline on its first dispatch (seconds on a machine whose shader cache
// is cold: 2.4 s for the first 5-token prompt before every matmul tile was prepared). After
// loading and the warm-up, no prompt length and no batch size compiles anything more.
TEST(WarmUp, OnVulkanNothingIsCompiledAfterTheWarmUp) {
  const std::string skip = compute::vulkan::reason_to_skip_vulkan();
  if (!skip.empty()) GTEST_SKIP() << skip;
  const auto m = model::load_model(SERVESCOPE_BUNDLED_MODEL, compute::BackendKind::kVulkan);
  const auto& vulkan = dynamic_cast<const compute::vulkan::VulkanBackend&>(*m->backend);
  EngineConfig config;
  config.max_batch_size = 8;
  warm_up(*m->transformer, weight_bytes(*m), config);
  const size_t compiled = vulkan.pipelines_compiled();
  config.warmed_up = true;
  Engine engine(*m->transformer, weight_bytes(*m), config);
  int32_t first_id = 100;
  // Prompts of every length up to 9 alone, then longer ones; then batches of 1 to 8 decodes.
  for (const int64_t length : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 33, 85}) {
    engine.submit(request_of(length, first_id++, m->config.vocab_size));
    engine.run_until_idle();
  }
  for (int64_t batch = 1; batch <= 8; ++batch) {
    for (int64_t i = 0; i < batch; ++i) {
      engine.submit(request_of(3, first_id++, m->config.vocab_size));
    }
    engine.run_until_idle();
  }
  EXPECT_EQ(vulkan.pipelines_compiled(), compiled);
}

}  // namespace
}  // namespace servescope::serving
