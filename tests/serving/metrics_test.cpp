// The one definition of each figure (engine/telemetry/metrics.h) on hand-made records: a
// throughput is its tokens over its time, a request's TPOT is its steps plus the gaps between
// them, and the serving clock leaves a held pause out of every time it stamps.
#include "engine/telemetry/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <deque>
#include <set>
#include <string>
#include <vector>

#include "engine/telemetry/serving_clock.h"

namespace servescope::telemetry {
namespace {

// A step of `sequence` (and `others` more decoding sequences) from start_ms to end_ms.
StepRecord decode_step(int64_t index, int64_t sequence, double start_ms, double end_ms,
                       int64_t others = 0) {
  StepRecord s;
  s.step_index = index;
  s.decode_tokens = 1 + others;
  s.sequences = 1 + others;
  s.max_batch_size = 4;
  s.start_ms = start_ms;
  s.end_ms = end_ms;
  s.wall_ms = end_ms - start_ms;
  s.batch.push_back({sequence, 0, SequencePhase::kDecode, 0, {1}, 7});
  for (int64_t i = 0; i < others; ++i) {
    s.batch.push_back({100 + i, 1 + i, SequencePhase::kDecode, 0, {1}, 7});
  }
  return s;
}

StepRecord prefill_step(double start_ms, double end_ms, int64_t tokens) {
  StepRecord s;
  s.prefill_tokens = tokens;
  s.sequences = 1;
  s.max_batch_size = 4;
  s.start_ms = start_ms;
  s.end_ms = end_ms;
  s.wall_ms = end_ms - start_ms;
  return s;
}

TEST(Metrics, EachFigureHasOneNameAndADefinitionOfItsInterval) {
  std::set<std::string> names;
  for (const Metric m : {Metric::kThroughput, Metric::kStepTime, Metric::kTtft, Metric::kTpot,
                         Metric::kOccupancy, Metric::kBytesPerStep}) {
    const std::string name(metric_name(m));
    names.insert(name);
    const std::string definition(metric_definition(m));
    // It starts with the figure's name (capitalised at the start of a sentence).
    ASSERT_GT(definition.size(), name.size());
    EXPECT_TRUE(std::equal(name.begin(), name.end(), definition.begin(), [](char a, char b) {
      return std::tolower(a) == std::tolower(b);
    })) << definition;
    EXPECT_GT(definition.size(), 40u);
  }
  EXPECT_EQ(names.size(), 6u);
}

TEST(Metrics, AThroughputIsItsTokensOverItsStepTimeExactly) {
  // A sweep's run: a prefill, full decode steps, then the tail draining.
  const std::vector<StepRecord> steps = {
      prefill_step(0.0, 9.0, 64), decode_step(0, 1, 10.0, 13.0, 7),
      decode_step(1, 1, 14.5, 17.0, 7), decode_step(2, 1, 17.5, 19.5, 3)};
  const StepTotals decode = decode_step_totals(steps);
  EXPECT_EQ(decode.steps, 3);
  EXPECT_EQ(decode.tokens, 8 + 8 + 4);
  EXPECT_DOUBLE_EQ(decode.step_ms, 3.0 + 2.5 + 2.0);
  EXPECT_EQ(throughput_tokens_per_s(decode),
            static_cast<double>(decode.tokens) / (decode.step_ms / 1000.0));
  EXPECT_EQ(mean_step_time_ms(decode), decode.step_ms / 3.0);
  // Throughput = tokens per step / step time: batch / step time when every step is full.
  EXPECT_DOUBLE_EQ(throughput_tokens_per_s(decode),
                   (20.0 / 3.0) / mean_step_time_ms(decode) * 1000.0);
  const StepTotals prefill = prefill_step_totals(steps);
  EXPECT_EQ(prefill.tokens, 64);
  EXPECT_DOUBLE_EQ(throughput_tokens_per_s(prefill), 64 / 0.009);
  // A deque (the window's folder) gives the same totals as a vector.
  const std::deque<StepRecord> folded(steps.begin(), steps.end());
  EXPECT_EQ(step_totals(folded).tokens, step_totals(steps).tokens);
  EXPECT_EQ(throughput_tokens_per_s(StepTotals{}), 0.0);
}

// A cold step (an engine whose kernels were not warmed: 2.4 s for a 5-token prompt on lavapipe)
// is neither phase's speed: the Phases panel's "Prefill: N tokens/s" must not read 3.6.
TEST(Metrics, TheCurrentRunOfWorkBeginsAfterTheLastLongIdleGap) {
  std::deque<StepRecord> steps(5);
  const double starts[] = {0.0, 10.0, 5000.0, 5010.0, 5020.0};
  for (size_t i = 0; i < steps.size(); ++i) {
    steps[i].start_ms = starts[i];
    steps[i].end_ms = starts[i] + 5.0;
  }
  EXPECT_EQ(first_step_after_idle(steps, 2000.0), 2u);  // 10+5 .. 5000: idle 4.985 s
  EXPECT_EQ(first_step_after_idle(steps, 10000.0), 0u);
  EXPECT_EQ(first_step_after_idle(std::deque<StepRecord>{}, 2000.0), 0u);
}

TEST(Metrics, AColdStepIsLeftOutOfEitherPhase) {
  StepRecord cold_prefill = prefill_step(0.0, 1380.0, 5);
  cold_prefill.cold = true;
  StepRecord cold_decode = decode_step(0, 1, 1380.0, 1900.0);
  cold_decode.cold = true;
  const std::vector<StepRecord> steps = {cold_prefill, cold_decode, prefill_step(1900.0, 1901.0, 5),
                                         decode_step(1, 1, 1901.0, 1902.0)};
  EXPECT_FALSE(is_prefill_step(cold_prefill));
  EXPECT_FALSE(is_decode_step(cold_decode));
  EXPECT_EQ(prefill_step_totals(steps).steps, 1);
  EXPECT_DOUBLE_EQ(throughput_tokens_per_s(prefill_step_totals(steps)), 5000.0);
  EXPECT_DOUBLE_EQ(throughput_tokens_per_s(decode_step_totals(steps)), 1000.0);
}

TEST(Metrics, ATpotIsTheMeanStepItRodePlusTheGapBetweenSteps) {
  // Request 5's tokens are stamped at its steps' ends; 1 ms passes between steps.
  std::vector<StepRecord> steps;
  RequestRecord r;
  r.request_id = 5;
  r.arrival_ms = 0.0;
  double t = 0.0;
  for (int64_t i = 0; i < 6; ++i) {
    const double step_ms = 2.0 + 0.5 * static_cast<double>(i % 2);
    steps.push_back(decode_step(i, 5, t, t + step_ms, 15));
    r.token_times_ms.push_back(t + step_ms);
    t += step_ms + 1.0;
  }
  steps.push_back(decode_step(6, 9, t, t + 4.0));  // someone else's step: not ridden
  const TpotBreakdown b = tpot_breakdown(r, steps);
  EXPECT_DOUBLE_EQ(b.tpot_ms, time_per_output_token_ms(r));
  EXPECT_DOUBLE_EQ(b.tpot_ms,
                   (r.token_times_ms.back() - r.token_times_ms.front()) / 5.0);  // the formula
  EXPECT_EQ(b.steps, 5);  // the steps after its first token
  EXPECT_DOUBLE_EQ(b.mean_step_ms, (2.5 + 2.0 + 2.5 + 2.0 + 2.5) / 5.0);
  EXPECT_NEAR(b.gap_ms, 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(b.mean_step_ms + b.gap_ms, b.tpot_ms);
  // Its steps gone from a bounded history: the TPOT alone.
  EXPECT_EQ(tpot_breakdown(r, std::vector<StepRecord>{}).steps, 0);
}

TEST(Metrics, MeanOccupancyIsTheMeanOfItsSeries) {
  EXPECT_DOUBLE_EQ(mean_occupancy(std::vector<double>{0.25, 0.5, 1.0}), 1.75 / 3.0);
  EXPECT_EQ(mean_occupancy(std::vector<double>{}), 0.0);
  const StepRecord s = decode_step(0, 1, 0.0, 1.0, 2);
  EXPECT_DOUBLE_EQ(batch_occupancy(s), 3.0 / 4.0);
}

TEST(ServingClock, AHeldPauseIsLeftOutOfEveryLaterTime) {
  double steady = 100.0;
  ServingClock clock([&steady] { return steady; });
  EXPECT_EQ(clock.now_ms(), 0.0);
  steady = 102.0;  // a 2 ms step
  EXPECT_EQ(clock.now_ms(), 2.0);
  clock.hold();
  steady = 502.0;  // slow motion's 400 ms between steps
  EXPECT_TRUE(clock.held());
  EXPECT_EQ(clock.now_ms(), 2.0);  // stands still
  EXPECT_EQ(clock.paused_ms(), 400.0);
  clock.hold();  // a second hold changes nothing
  clock.resume();
  steady = 504.5;
  EXPECT_EQ(clock.now_ms(), 4.5);
  EXPECT_EQ(clock.paused_ms(), 400.0);
  EXPECT_EQ(clock.to_serving_ms(503.0), 3.0);  // a kernel span stamped on the steady clock
}

TEST(ServingClock, TpotWithInjectedPausesEqualsTpotWithout) {
  // The same six 2 ms steps, back to back and with a 400 ms pause held after each one.
  auto tpot = [](double pause_ms) {
    double steady = 0.0;
    ServingClock clock([&steady] { return steady; });
    RequestRecord r;
    r.arrival_ms = clock.now_ms();
    for (int i = 0; i < 6; ++i) {
      clock.resume();  // Engine::step() resumes first
      steady += 2.0;
      r.token_times_ms.push_back(clock.now_ms());
      clock.hold();
      steady += pause_ms;
    }
    return std::pair{time_to_first_token_ms(r), time_per_output_token_ms(r)};
  };
  EXPECT_EQ(tpot(400.0), tpot(0.0));
  EXPECT_EQ(tpot(400.0).second, 2.0);
}

}  // namespace
}  // namespace servescope::telemetry
