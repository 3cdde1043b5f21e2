// The load generator: a seed names one workload, and a run serves every request and sums up
// what the engine reported.
#include "engine/serving/load_generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/error.h"
#include "engine/model/model.h"
#include "engine/telemetry/metrics.h"

namespace servescope::serving {
namespace {

WorkloadSpec small_spec() {
  WorkloadSpec spec;
  spec.clients = 6;
  spec.prompt_tokens = {3, 12};
  spec.output_tokens = {2, 6};
  spec.vocab_size = 512;
  spec.seed = 17;
  return spec;
}

bool same_requests(const std::vector<SimulatedRequest>& a, const std::vector<SimulatedRequest>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].arrival_ms != b[i].arrival_ms || a[i].prompt_ids != b[i].prompt_ids ||
        a[i].max_tokens != b[i].max_tokens) {
      return false;
    }
  }
  return true;
}

TEST(LoadGenerator, ASeedNamesOneWorkload) {
  WorkloadSpec spec = small_spec();
  spec.rate_per_s = 50.0;
  const std::vector<SimulatedRequest> first = make_workload(spec);
  EXPECT_TRUE(same_requests(first, make_workload(spec)));
  spec.seed = 18;
  EXPECT_FALSE(same_requests(first, make_workload(spec)));

  ASSERT_EQ(first.size(), 6u);
  EXPECT_EQ(first[0].arrival_ms, 0.0);
  for (size_t i = 0; i < first.size(); ++i) {
    const auto length = static_cast<int64_t>(first[i].prompt_ids.size());
    EXPECT_GE(length, 3);
    EXPECT_LE(length, 12);
    EXPECT_GE(first[i].max_tokens, 2);
    EXPECT_LE(first[i].max_tokens, 6);
    for (const int32_t id : first[i].prompt_ids) EXPECT_LT(id, 512);
    if (i > 0) {
      EXPECT_GT(first[i].arrival_ms, first[i - 1].arrival_ms);
    }
  }
}

TEST(LoadGenerator, PoissonArrivalsHaveTheRequestedMeanRate) {
  WorkloadSpec spec = small_spec();
  spec.clients = 2001;
  spec.rate_per_s = 100.0;
  const std::vector<SimulatedRequest> requests = make_workload(spec);
  // 2000 gaps of mean 10 ms: the mean is within a few percent of it.
  const double mean_gap_ms = requests.back().arrival_ms / 2000.0;
  EXPECT_NEAR(mean_gap_ms, 10.0, 0.7);
}

TEST(LoadGenerator, WithoutARateAllArriveAtOnce) {
  WorkloadSpec spec = small_spec();
  for (const SimulatedRequest& r : make_workload(spec)) EXPECT_EQ(r.arrival_ms, 0.0);
  spec.rate_per_s = std::numeric_limits<double>::infinity();
  for (const SimulatedRequest& r : make_workload(spec)) EXPECT_EQ(r.arrival_ms, 0.0);
}

TEST(LoadGenerator, PromptsAreWindowsOfTheText) {
  WorkloadSpec spec = small_spec();
  for (int32_t i = 0; i < 40; ++i) spec.text_ids.push_back(100 + i);
  for (const SimulatedRequest& r : make_workload(spec)) {
    for (size_t k = 1; k < r.prompt_ids.size(); ++k) {
      EXPECT_EQ(r.prompt_ids[k], r.prompt_ids[k - 1] + 1);  // consecutive text tokens
    }
  }
}

TEST(LoadGenerator, RefusesBadSpecs) {
  WorkloadSpec spec = small_spec();
  spec.clients = 0;
  EXPECT_THROW(make_workload(spec), InputError);
  spec = small_spec();
  spec.rate_per_s = -1.0;
  EXPECT_THROW(make_workload(spec), InputError);
  spec = small_spec();
  spec.prompt_tokens = {5, 4};
  EXPECT_THROW(make_workload(spec), InputError);
  spec = small_spec();
  spec.output_tokens = {0, 4};
  EXPECT_THROW(make_workload(spec), InputError);
  spec = small_spec();
  spec.vocab_size = 0;
  EXPECT_THROW(make_workload(spec), InputError);
}

TEST(LoadGenerator, SummaryOfKnownRecords) {
  std::vector<telemetry::StepRecord> steps(2);
  steps[0].sequences = 1;
  steps[0].max_batch_size = 4;
  steps[0].kv_blocks_used = 3;
  steps[0].wall_ms = 10.0;
  steps[0].weight_bytes_read = 1'000'000;
  steps[0].flops = 2e6;
  steps[0].prefill_tokens = 9;
  steps[1].decode_tokens = 3;
  steps[1].sequences = 3;
  steps[1].max_batch_size = 4;
  steps[1].kv_blocks_used = 5;
  steps[1].wall_ms = 30.0;
  steps[1].weight_bytes_read = 3'000'000;
  steps[1].flops = 6e6;
  std::vector<telemetry::RequestRecord> requests(2);
  requests[0] = {0, 10, 0, 1, 0.0, 0.0, {20.0, 30.0, 40.0}};  // TTFT 20, TPOT 10
  requests[1] = {1, 5, 0, 0, 10.0, 10.0, {50.0}};             // TTFT 40, no TPOT

  const LoadSummary s = summarize_load(steps, requests, 50.0, 1024);
  EXPECT_EQ(s.requests, 2);
  EXPECT_EQ(s.prompt_tokens, 15);
  EXPECT_EQ(s.output_tokens, 4);
  EXPECT_DOUBLE_EQ(s.output_tokens_per_s, 80.0);
  EXPECT_DOUBLE_EQ(s.ttft_ms.p50, 30.0);
  EXPECT_DOUBLE_EQ(s.tpot_ms.p99, 10.0);
  EXPECT_DOUBLE_EQ(s.mean_batch_occupancy, 0.5);
  EXPECT_EQ(s.kv_peak_blocks, 5);
  EXPECT_EQ(s.kv_peak_bytes, 5u * 1024u);
  EXPECT_EQ(s.preemptions, 1);
  EXPECT_EQ(s.steps, 2);
  EXPECT_DOUBLE_EQ(s.mean_step_ms, 20.0);
  EXPECT_DOUBLE_EQ(s.busy_s, 0.04);
  EXPECT_EQ(s.decode_only_steps, 1);
  EXPECT_DOUBLE_EQ(s.mean_decode_step_ms, 30.0);
  EXPECT_DOUBLE_EQ(s.decode_tokens_per_s, 100.0);  // 3 tokens in the 30 ms decode-only step
  EXPECT_DOUBLE_EQ(s.achieved_gb_per_s, 0.1);      // 4 MB in 40 ms
  EXPECT_DOUBLE_EQ(s.achieved_gflop_per_s, 0.2);   // 8 MFLOP in 40 ms
  // Kernel times count as measured only when every step measured them.
  EXPECT_FALSE(s.kernel_times_measured);
  steps[0].kernel_times_measured = true;
  EXPECT_FALSE(summarize_load(steps, requests, 50.0, 1024).kernel_times_measured);
  steps[1].kernel_times_measured = true;
  EXPECT_TRUE(summarize_load(steps, requests, 50.0, 1024).kernel_times_measured);
}

TEST(LoadGenerator, RunServesEveryRequest) {
  auto m = model::load_model(std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/llama-f32.gguf",
                             compute::BackendKind::kCpu);
  WorkloadSpec spec = small_spec();
  spec.rate_per_s = 400.0;  // a few ms apart: some arrive while others run
  const std::vector<SimulatedRequest> requests = make_workload(spec);
  const LoadResult result =
      run_load(*m->transformer, model::summarize_weights(m->file).bytes,
               {.max_batch_size = 4, .kv_type = gguf::GgmlType::F16, .block_size = 8}, requests);
  int64_t asked = 0;
  int64_t prompt = 0;
  for (const SimulatedRequest& r : requests) {
    asked += r.max_tokens;
    prompt += static_cast<int64_t>(r.prompt_ids.size());
  }
  const LoadSummary& s = result.summary;
  EXPECT_EQ(s.requests, 6);
  EXPECT_EQ(s.output_tokens, asked);  // the stop token is ignored
  EXPECT_EQ(s.prompt_tokens, prompt);
  EXPECT_GT(s.output_tokens_per_s, 0.0);
  EXPECT_GE(s.wall_s * 1000.0, requests.back().arrival_ms);
  EXPECT_GT(s.ttft_ms.p50, 0.0);
  EXPECT_LE(s.ttft_ms.p50, s.ttft_ms.p99);
  EXPECT_GT(s.mean_batch_occupancy, 0.0);
  EXPECT_LE(s.mean_batch_occupancy, 1.0);
  EXPECT_GT(s.kv_peak_blocks, 0);
  EXPECT_EQ(s.steps, static_cast<int64_t>(result.steps.size()));
  EXPECT_GT(s.achieved_gb_per_s, 0.0);
  EXPECT_GT(s.achieved_gflop_per_s, 0.0);
  for (const telemetry::RequestRecord& r : result.requests) {
    EXPECT_GE(telemetry::queue_time_ms(r), 0.0);
    EXPECT_NEAR(r.arrival_ms - result.requests.front().arrival_ms,
                requests[static_cast<size_t>(r.request_id)].arrival_ms -
                    requests[static_cast<size_t>(result.requests.front().request_id)].arrival_ms,
                1e-6);
  }
}

// Static batching through the engine on the wall clock. Not a timing assertion: the engine may
// not start a batch before it is due, so a request that waits for the batch waits at least the
// wait, however fast or slow the machine is.
TEST(LoadGenerator, StaticBatchingHoldsRequestsUntilTheBatchIsDue) {
  auto m = model::load_model(std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/llama-f32.gguf",
                             compute::BackendKind::kCpu);
  WorkloadSpec spec = small_spec();
  spec.clients = 3;  // fewer than the batch: it never fills, it goes when due
  const std::vector<SimulatedRequest> requests = make_workload(spec);
  EngineConfig config{.max_batch_size = 4, .kv_type = gguf::GgmlType::F16, .block_size = 8};
  config.batching = BatchingPolicy::kStatic;
  config.batch_wait_ms = 30.0;
  const LoadResult result =
      run_load(*m->transformer, model::summarize_weights(m->file).bytes, config, requests);
  ASSERT_EQ(result.requests.size(), 3u);
  ASSERT_FALSE(result.steps.empty());
  EXPECT_EQ(result.steps.front().admitted.size(), 3u);  // one batch, all of them
  for (const telemetry::RequestRecord& r : result.requests) {
    EXPECT_GE(r.first_scheduled_ms - r.arrival_ms, 30.0) << "request " << r.request_id;
    EXPECT_GE(telemetry::time_to_first_token_ms(r), 30.0);
  }
}

// should_stop (bench's Ctrl-C): the run ends after the step it was asked in, and the result
// covers the requests finished by then, not the whole workload.
TEST(LoadGenerator, AStopRequestEndsTheRunAfterTheCurrentStep) {
  auto m = model::load_model(std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/llama-f32.gguf",
                             compute::BackendKind::kCpu);
  WorkloadSpec spec = small_spec();
  spec.clients = 8;
  const std::vector<SimulatedRequest> requests = make_workload(spec);
  const EngineConfig config{.max_batch_size = 2, .kv_type = gguf::GgmlType::F16, .block_size = 8};
  int64_t finished = 0;
  const LoadResult result = run_load(
      *m->transformer, model::summarize_weights(m->file).bytes, config, requests,
      [&](int64_t done, int64_t /*total*/) { finished = done; }, [&] { return finished >= 2; });
  EXPECT_GE(result.requests.size(), 2u);
  EXPECT_LT(result.requests.size(), requests.size());
  EXPECT_EQ(result.summary.requests, static_cast<int64_t>(result.requests.size()));
}

// LoadRun, stepped by its caller (the window's engine thread), serves the same tokens as
// run_load; a caller that waits what a turn asks for sees it done, with every request counted.
TEST(LoadGenerator, ALoadRunAdvancedByItsCallerServesWhatRunLoadServes) {
  auto m = model::load_model(std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/llama-f32.gguf",
                             compute::BackendKind::kCpu);
  WorkloadSpec spec = small_spec();
  spec.rate_per_s = 400.0;  // a few ms apart: some turns find nothing due yet
  const std::vector<SimulatedRequest> requests = make_workload(spec);
  const EngineConfig config{.max_batch_size = 2, .kv_type = gguf::GgmlType::F16, .block_size = 8};
  const uint64_t weight_bytes = model::summarize_weights(m->file).bytes;
  LoadRun run(*m->transformer, weight_bytes, config, requests);
  EXPECT_EQ(run.total(), static_cast<int64_t>(requests.size()));
  int64_t steps = 0;
  for (LoadRun::Turn turn = run.advance(); !turn.done; turn = run.advance()) {
    if (turn.stepped) {
      ++steps;
      continue;
    }
    ASSERT_GE(turn.wait_ms, 0.0);
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(turn.wait_ms));
  }
  EXPECT_EQ(run.finished(), run.total());
  const LoadResult stepped = run.take_result();
  EXPECT_EQ(stepped.summary.steps, steps);
  const LoadResult whole = run_load(*m->transformer, weight_bytes, config, requests);
  ASSERT_EQ(stepped.requests.size(), whole.requests.size());
  const auto by_id = [](std::vector<telemetry::RequestRecord> records) {
    std::ranges::sort(records, {}, &telemetry::RequestRecord::request_id);
    return records;
  };
  const std::vector<telemetry::RequestRecord> a = by_id(stepped.requests);
  const std::vector<telemetry::RequestRecord> b = by_id(whole.requests);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].output_ids, b[i].output_ids) << "request " << a[i].request_id;
  }
}

// The desktop application keeps one engine and changes the policy between runs.
TEST(LoadGenerator, TheBatchingPolicyChangesBetweenRunsOfOneEngine) {
  auto m = model::load_model(std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/llama-f32.gguf",
                             compute::BackendKind::kCpu);
  Engine engine(*m->transformer, model::summarize_weights(m->file).bytes,
                {.max_batch_size = 2, .kv_type = gguf::GgmlType::F16, .block_size = 8});
  EngineRequest request;
  request.prompt_ids = {1, 2, 3};
  request.max_tokens = 2;
  engine.submit(request);
  EXPECT_FALSE(engine.waiting_for_batch());  // continuous: runs at once
  engine.run_until_idle();

  engine.set_batching(BatchingPolicy::kStatic, 1e9);  // a batch of 2 that never fills in time
  const double arrival_ms = engine.now_ms();
  const SequenceId id = engine.submit(request, arrival_ms);
  EXPECT_TRUE(engine.waiting_for_batch());
  ASSERT_TRUE(engine.batch_due_ms().has_value());
  EXPECT_DOUBLE_EQ(*engine.batch_due_ms(), arrival_ms + 1e9);
  EXPECT_FALSE(engine.step());  // collecting: no step runs
  EXPECT_FALSE(engine.is_finished(id));

  engine.set_batching(BatchingPolicy::kStatic, 0.0);  // due at its arrival: goes now
  EXPECT_FALSE(engine.waiting_for_batch());
  EXPECT_TRUE(engine.step());
  engine.run_until_idle();
  EXPECT_TRUE(engine.is_finished(id));
  EXPECT_THROW(engine.set_batching(BatchingPolicy::kStatic, -1.0), InputError);
}

TEST(LoadGenerator, StaticBatchingAdmitsTheNextBatchOnlyWhenTheLastHasFinished) {
  auto m = model::load_model(std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/llama-f32.gguf",
                             compute::BackendKind::kCpu);
  const std::vector<SimulatedRequest> requests = make_workload(small_spec());  // 6 at t = 0
  EngineConfig config{.max_batch_size = 4, .kv_type = gguf::GgmlType::F16, .block_size = 8};
  config.batching = BatchingPolicy::kStatic;
  config.batch_wait_ms = 50.0;  // the first batch is full at once, the second waits for it
  const LoadResult result =
      run_load(*m->transformer, model::summarize_weights(m->file).bytes, config, requests);
  ASSERT_EQ(result.requests.size(), 6u);
  int64_t running = 0;
  std::vector<size_t> batch_sizes;
  for (const telemetry::StepRecord& step : result.steps) {
    if (!step.admitted.empty()) {
      EXPECT_EQ(running, 0) << "step " << step.step_index << " admitted into a running batch";
      batch_sizes.push_back(step.admitted.size());
    }
    running += static_cast<int64_t>(step.admitted.size()) -
               static_cast<int64_t>(step.finished.size() + step.preempted.size());
  }
  EXPECT_EQ(batch_sizes, (std::vector<size_t>{4, 2}));
  int64_t asked = 0;
  for (const SimulatedRequest& r : requests) asked += r.max_tokens;
  EXPECT_EQ(result.summary.output_tokens, asked);
}

}  // namespace
}  // namespace servescope::serving
