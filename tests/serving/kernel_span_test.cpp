// Opt-in per-operation spans (EngineConfig::kernel_spans) against the step's own timeline: on
// the CPU backend they are ordered, do not overlap, lie inside the forward pass and account for
// most of it, add up per class to the step's kernel times, and cover every layer; off, nothing
// is recorded. On Vulkan (timestamp queries) there is one span per dispatch, with the CPU
// backend's kinds and layers operation for operation.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "engine/serving/engine.h"
#include "engine/telemetry/observer.h"
#include "tests/compute/vulkan_test_support.h"

namespace servescope::serving {
namespace {

using telemetry::KernelKind;
using telemetry::KernelSpan;
using telemetry::StepRecord;

const std::string kModels = std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/";

class StepCollector final : public telemetry::Observer {
 public:
  void on_step(const StepRecord& step) override { steps.push_back(step); }
  void on_request(const telemetry::RequestRecord& /*request*/) override {}
  void on_kv_event(const telemetry::KvEvent& /*event*/) override {}

  std::vector<StepRecord> steps;
};

// Three requests of different lengths through a small batch: prefill, mixed and decode steps.
std::vector<StepRecord> run_steps(model::Model& m, bool kernel_spans) {
  StepCollector collector;
  Engine engine(*m.transformer, model::summarize_weights(m.file).bytes,
                {.max_batch_size = 2, .token_budget = 16, .kernel_spans = kernel_spans},
                &collector);
  for (int64_t n : {5, 23, 9}) {
    EngineRequest r;
    for (int64_t i = 0; i < n; ++i) r.prompt_ids.push_back(static_cast<int32_t>(1 + i * 7 % 50));
    r.max_tokens = 6;
    engine.submit(r);
  }
  engine.run_until_idle();
  return collector.steps;
}

double kind_ms(const std::vector<KernelSpan>& spans, KernelKind kind) {
  double total = 0.0;
  for (const KernelSpan& s : spans) {
    if (s.kind == kind) total += s.end_ms - s.start_ms;
  }
  return total;
}

// Spans of one step lie in its forward pass in order without overlapping, layer after layer,
// and cover every layer and the work outside them (-1). Returns the time they cover.
double expect_ordered_over_every_layer(const StepRecord& step, int64_t n_layers,
                                       const std::string& name) {
  const double forward_start = step.start_ms + step.schedule_ms;
  const double forward_end = forward_start + step.forward_ms;
  EXPECT_GE(step.spans.front().start_ms, forward_start) << name;
  EXPECT_LE(step.spans.back().end_ms, forward_end) << name;
  double previous_end = step.spans.front().start_ms;
  double covered_ms = 0.0;
  std::set<int64_t> layers;
  int64_t previous_layer = -1;
  for (const KernelSpan& s : step.spans) {
    EXPECT_GE(s.start_ms, previous_end) << name << ": spans overlap or are out of order";
    EXPECT_GE(s.end_ms, s.start_ms) << name;
    previous_end = s.end_ms;
    covered_ms += s.end_ms - s.start_ms;
    // Layers run in order: embeddings (-1), 0 .. layers - 1, then the logits (-1 again).
    if (s.layer >= 0) {
      EXPECT_GE(s.layer, previous_layer) << name;
      previous_layer = s.layer;
    }
    layers.insert(s.layer);
  }
  std::set<int64_t> expected{-1};
  for (int64_t l = 0; l < n_layers; ++l) expected.insert(l);
  EXPECT_EQ(layers, expected) << name;
  return covered_ms;
}

TEST(KernelSpans, CpuSpansTileTheForwardPassLayerByLayer) {
  for (const std::string name : {"llama-f32", "gpt2-q8_0"}) {
    const auto m = model::load_model(kModels + name + ".gguf", compute::BackendKind::kCpu);
    const std::vector<StepRecord> steps = run_steps(*m, true);
    ASSERT_GT(steps.size(), 3u) << name;
    for (const StepRecord& step : steps) {
      ASSERT_TRUE(step.spans_measured) << name;
      ASSERT_FALSE(step.spans.empty()) << name;
      const double covered_ms = expect_ordered_over_every_layer(step, m->config.n_layers, name);
      // The spans are the same measurements as the kernel-class totals.
      for (const auto& [kind, total] :
           {std::pair{KernelKind::kMatmul, step.kernel_times.matmul_ms},
            std::pair{KernelKind::kAttention, step.kernel_times.attention_ms},
            std::pair{KernelKind::kNorm, step.kernel_times.norm_ms},
            std::pair{KernelKind::kOther, step.kernel_times.other_ms}}) {
        EXPECT_NEAR(kind_ms(step.spans, kind), total, 1e-6) << name;
      }
      EXPECT_GT(kind_ms(step.spans, KernelKind::kMatmul), 0.0) << name;
      EXPECT_GT(kind_ms(step.spans, KernelKind::kAttention), 0.0) << name;
      EXPECT_GT(kind_ms(step.spans, KernelKind::kNorm), 0.0) << name;
      // The operations lie inside the forward pass. How much of it they cover (about 80% for
      // these tiny models in a release build, far less under sanitizers, which slow the
      // bookkeeping between operations more) is a timing, so it is not asserted here.
      EXPECT_LE(covered_ms, step.forward_ms) << name;
    }
  }
}

TEST(KernelSpans, NothingIsRecordedWhenOff) {
  const auto m = model::load_model(kModels + "llama-f32.gguf", compute::BackendKind::kCpu);
  for (const StepRecord& step : run_steps(*m, false)) {
    EXPECT_FALSE(step.spans_measured);
    EXPECT_TRUE(step.spans.empty());
    EXPECT_TRUE(step.kernel_times_measured);  // the class totals are still there
  }
  // Spans asked for once and turned off again leave nothing behind in the backend.
  run_steps(*m, true);
  EXPECT_TRUE(m->backend->take_kernel_spans().empty());
}

// Vulkan times every dispatch with timestamp queries (one span per dispatch). The forward pass
// calls one backend operation per dispatch (fusions are operations of their own), so a step's
// (kind, layer) sequence is the CPU backend's, operation for operation, for the same batches.
TEST(KernelSpans, VulkanSpansAreOnePerDispatchAndMatchTheCpuKinds) {
  const std::string skip = compute::vulkan::reason_to_skip_vulkan();
  if (!skip.empty()) GTEST_SKIP() << skip;
  for (const std::string name : {"llama-f32", "gpt2-q8_0"}) {
    const auto vk = model::load_model(kModels + name + ".gguf", compute::BackendKind::kVulkan);
    const auto cpu = model::load_model(kModels + name + ".gguf", compute::BackendKind::kCpu);
    const std::vector<StepRecord> steps = run_steps(*vk, true);
    const std::vector<StepRecord> cpu_steps = run_steps(*cpu, true);
    ASSERT_GT(steps.size(), 3u) << name;
    ASSERT_EQ(steps.size(), cpu_steps.size()) << name;
    for (size_t i = 0; i < steps.size(); ++i) {
      const StepRecord& step = steps[i];
      ASSERT_TRUE(step.spans_measured) << name << ": " << step.spans_note;
      EXPECT_TRUE(step.spans_note.empty()) << name;
      ASSERT_FALSE(step.spans.empty()) << name;
      EXPECT_TRUE(step.kernel_times_measured) << name;  // the same timestamps give the classes
      expect_ordered_over_every_layer(step, vk->config.n_layers, name);
      if (i + 1 == steps.size()) {  // the backend's own count of the step it ran last
        const auto& timings =
            dynamic_cast<const compute::vulkan::VulkanBackend&>(*vk->backend).last_step_timings();
        EXPECT_EQ(step.spans.size(), timings.dispatches) << name;
        EXPECT_EQ(step.spans.size(), timings.kernels.size()) << name;
      }
      const StepRecord& on_cpu = cpu_steps[i];
      ASSERT_EQ(step.prefill_tokens, on_cpu.prefill_tokens) << name << " step " << i;
      ASSERT_EQ(step.decode_tokens, on_cpu.decode_tokens) << name << " step " << i;
      ASSERT_EQ(step.spans.size(), on_cpu.spans.size()) << name << " step " << i;
      for (size_t j = 0; j < step.spans.size(); ++j) {
        EXPECT_EQ(step.spans[j].kind, on_cpu.spans[j].kind) << name << " step " << i << " #" << j;
        EXPECT_EQ(step.spans[j].layer, on_cpu.spans[j].layer) << name << " step " << i << " #" << j;
      }
    }
  }
}

// A device without timestamps on its compute queue cannot time dispatches: the record says
// spans were not measured, and why, instead of showing none as if measured.
TEST(KernelSpans, VulkanWithoutTimestampsSaysWhy) {
  const std::string skip = compute::vulkan::reason_to_skip_vulkan();
  if (!skip.empty()) GTEST_SKIP() << skip;
  const auto m = model::load_model(kModels + "llama-f32.gguf", compute::BackendKind::kVulkan);
  auto* vk = dynamic_cast<compute::vulkan::VulkanBackend*>(m->backend.get());
  ASSERT_NE(vk, nullptr);
  vk->simulate_no_timestamps();
  for (const StepRecord& step : run_steps(*m, true)) {
    EXPECT_FALSE(step.spans_measured);
    EXPECT_TRUE(step.spans.empty());
    EXPECT_NE(step.spans_note.find("no timestamp queries"), std::string::npos) << step.spans_note;
    EXPECT_NE(step.spans_note.find(vk->device().name), std::string::npos) << step.spans_note;
    EXPECT_FALSE(step.kernel_times_measured);
  }
}

// Off, Vulkan records nothing; and the timestamps that spans turned on go back to the
// backend's own setting (off by default on CPU devices such as lavapipe).
TEST(KernelSpans, VulkanRecordsNothingWhenOff) {
  const std::string skip = compute::vulkan::reason_to_skip_vulkan();
  if (!skip.empty()) GTEST_SKIP() << skip;
  const auto m = model::load_model(kModels + "llama-f32.gguf", compute::BackendKind::kVulkan);
  run_steps(*m, true);
  const auto* vk = dynamic_cast<const compute::vulkan::VulkanBackend*>(m->backend.get());
  ASSERT_NE(vk, nullptr);
  for (const StepRecord& step : run_steps(*m, false)) {
    EXPECT_FALSE(step.spans_measured);
    EXPECT_TRUE(step.spans.empty());
    EXPECT_TRUE(step.spans_note.empty());  // not asked for: nothing to explain
    if (vk->device().type == "cpu") {
      EXPECT_FALSE(step.kernel_times_measured);
    }
  }
  EXPECT_TRUE(m->backend->take_kernel_spans().empty());
}

}  // namespace
}  // namespace servescope::serving
