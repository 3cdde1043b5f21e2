// Static batching in the scheduler, on a fake clock: requests wait until the batch is full or
// the oldest has waited batch_wait_ms, a running static batch admits nobody until its last
// request finishes, and the outputs are those of each request run alone.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "engine/core/error.h"
#include "engine/serving/scheduler.h"
#include "scheduler_test_support.h"

namespace servescope::serving {
namespace {

using serving::testing::FakeForward;
using serving::testing::reference_output;

constexpr int64_t kContext = 64;

std::vector<int32_t> iota_tokens(int64_t n, int32_t first = 0) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

SchedulerConfig static_config(int64_t max_batch, double wait_ms) {
  SchedulerConfig c{max_batch, 64, kContext};
  c.policy = BatchingPolicy::kStatic;
  c.batch_wait_ms = wait_ms;
  return c;
}

KvLayout layout() { return KvLayout{2, 32, gguf::GgmlType::F16, 4}; }

// schedule at now_ms -> fake forward -> complete_step.
StepBatch step_at(Scheduler& scheduler, FakeForward& forward, double now_ms) {
  StepBatch batch = scheduler.schedule(now_ms);
  if (!batch.empty()) scheduler.complete_step(batch, forward.run(batch));
  return batch;
}

TEST(StaticBatching, RequestsWaitUntilTheBatchIsFull) {
  KvBlockPool pool(layout(), 64);
  Scheduler scheduler(static_config(4, 100.0), pool);
  FakeForward forward(pool);
  scheduler.submit(Request{iota_tokens(3), 2, -1}, 0.0);
  scheduler.submit(Request{iota_tokens(3, 10), 2, -1}, 5.0);
  EXPECT_TRUE(scheduler.collecting_batch(20.0));
  ASSERT_TRUE(scheduler.batch_due_ms().has_value());
  EXPECT_DOUBLE_EQ(*scheduler.batch_due_ms(), 100.0);  // the oldest arrived at 0
  EXPECT_TRUE(step_at(scheduler, forward, 20.0).empty());
  EXPECT_EQ(scheduler.waiting().size(), 2u);

  scheduler.submit(Request{iota_tokens(3, 20), 2, -1}, 30.0);
  EXPECT_TRUE(step_at(scheduler, forward, 30.0).empty());
  scheduler.submit(Request{iota_tokens(3, 30), 2, -1}, 40.0);  // the fourth fills the batch
  EXPECT_FALSE(scheduler.collecting_batch(40.0));
  const StepBatch first = step_at(scheduler, forward, 40.0);
  EXPECT_EQ(first.admitted, (std::vector<SequenceId>{0, 1, 2, 3}));
  EXPECT_EQ(first.sequences.size(), 4u);
  EXPECT_FALSE(scheduler.batch_due_ms().has_value());  // a batch runs: nothing is collecting
}

TEST(StaticBatching, ABatchThatDoesNotFillGoesWhenTheOldestHasWaitedTheWait) {
  KvBlockPool pool(layout(), 64);
  Scheduler scheduler(static_config(4, 10.0), pool);
  FakeForward forward(pool);
  scheduler.submit(Request{iota_tokens(3), 2, -1}, 0.0);
  scheduler.submit(Request{iota_tokens(3, 10), 2, -1}, 3.0);
  EXPECT_TRUE(step_at(scheduler, forward, 9.5).empty());
  const StepBatch batch = step_at(scheduler, forward, 10.0);
  EXPECT_EQ(batch.admitted, (std::vector<SequenceId>{0, 1}));
}

TEST(StaticBatching, ARunningBatchAdmitsNoNewcomerUntilItsLastRequestFinishes) {
  KvBlockPool pool(layout(), 64);
  Scheduler scheduler(static_config(2, 0.0), pool);
  FakeForward forward(pool);
  const Request short_one{iota_tokens(3), 2, -1};
  const Request long_one{iota_tokens(3, 10), 8, -1};
  const Request newcomer{iota_tokens(3, 20), 3, -1};
  const SequenceId a = scheduler.submit(short_one, 0.0);
  const SequenceId b = scheduler.submit(long_one, 0.0);
  double now = 0.0;
  EXPECT_EQ(step_at(scheduler, forward, now).admitted, (std::vector<SequenceId>{a, b}));
  const SequenceId c = scheduler.submit(newcomer, 1.0);

  int64_t steps_with_a_free_slot = 0;
  while (scheduler.sequence(b).status != SequenceStatus::kFinished) {
    now += 1.0;
    const bool a_done = scheduler.sequence(a).status == SequenceStatus::kFinished;
    const StepBatch batch = step_at(scheduler, forward, now);
    EXPECT_TRUE(batch.admitted.empty()) << "step " << batch.step_index;
    if (a_done) {
      ++steps_with_a_free_slot;
      EXPECT_EQ(batch.sequences.size(), 1u);  // the finished request's slot stays empty
    }
    EXPECT_EQ(scheduler.sequence(c).status, SequenceStatus::kWaiting);
  }
  EXPECT_GT(steps_with_a_free_slot, 0) << "the case should leave a slot empty for a while";
  // The batch is done: the newcomer (long past its wait) goes at once.
  EXPECT_EQ(step_at(scheduler, forward, now + 1.0).admitted, (std::vector<SequenceId>{c}));
  while (scheduler.has_unfinished()) step_at(scheduler, forward, now += 1.0);
  EXPECT_EQ(scheduler.sequence(a).output_ids(), reference_output(short_one, kContext));
  EXPECT_EQ(scheduler.sequence(b).output_ids(), reference_output(long_one, kContext));
  EXPECT_EQ(scheduler.sequence(c).output_ids(), reference_output(newcomer, kContext));
}

TEST(StaticBatching, ContinuousBatchingLetsTheSameNewcomerJoinMidFlight) {
  KvBlockPool pool(layout(), 64);
  Scheduler scheduler(SchedulerConfig{2, 64, kContext}, pool);
  FakeForward forward(pool);
  const SequenceId a = scheduler.submit(Request{iota_tokens(3), 2, -1});
  const SequenceId b = scheduler.submit(Request{iota_tokens(3, 10), 8, -1});
  step_at(scheduler, forward, 0.0);
  const SequenceId c = scheduler.submit(Request{iota_tokens(3, 20), 3, -1});
  while (scheduler.sequence(a).status != SequenceStatus::kFinished) step_at(scheduler, forward, 0);
  step_at(scheduler, forward, 0.0);
  EXPECT_EQ(scheduler.sequence(c).status, SequenceStatus::kRunning);
  EXPECT_NE(scheduler.sequence(b).status, SequenceStatus::kFinished);
}

TEST(StaticBatching, ABatchLargerThanTheBudgetPrefillsInChunksAndStillAdmitsNobodyElse) {
  KvBlockPool pool(layout(), 64);
  SchedulerConfig config = static_config(3, 0.0);
  config.token_budget = 8;  // three 6-token prompts need three steps of prefill
  Scheduler scheduler(config, pool);
  FakeForward forward(pool);
  std::vector<Request> requests;
  for (int i = 0; i < 3; ++i) requests.push_back(Request{iota_tokens(6, 10 * i), 3, -1});
  for (const Request& r : requests) scheduler.submit(r, 0.0);
  const StepBatch first = step_at(scheduler, forward, 0.0);
  EXPECT_EQ(first.admitted.size(), 3u);  // all three join now, though only 8 tokens run
  EXPECT_EQ(first.tokens(), 8);
  scheduler.submit(Request{iota_tokens(2, 40), 1, -1}, 0.0);
  while (scheduler.running().size() > 0) {
    EXPECT_TRUE(step_at(scheduler, forward, 1.0).admitted.empty());
  }
  for (SequenceId id = 0; id < 3; ++id) {
    EXPECT_EQ(scheduler.sequence(id).output_ids(),
              reference_output(requests[static_cast<size_t>(id)], kContext));
  }
}

TEST(StaticBatching, PolicyNamesAndWaitsAreChecked) {
  EXPECT_EQ(parse_batching_policy("static"), BatchingPolicy::kStatic);
  EXPECT_EQ(parse_batching_policy("continuous"), BatchingPolicy::kContinuous);
  EXPECT_EQ(batching_policy_name(BatchingPolicy::kStatic), "static");
  EXPECT_THROW(parse_batching_policy("dynamic"), InputError);
  KvBlockPool pool(layout(), 8);
  EXPECT_THROW(Scheduler(static_config(2, -1.0), pool), InputError);
  Scheduler scheduler(SchedulerConfig{2, 64, kContext}, pool);
  EXPECT_THROW(scheduler.set_batching(BatchingPolicy::kStatic, -5.0), InputError);
  scheduler.submit(Request{iota_tokens(3), 2, -1}, 0.0);
  EXPECT_FALSE(scheduler.collecting_batch(0.0));  // continuous: nothing ever collects
  scheduler.set_batching(BatchingPolicy::kStatic, 50.0);
  EXPECT_TRUE(scheduler.collecting_batch(0.0));
  EXPECT_FALSE(scheduler.collecting_batch(50.0));
}

}  // namespace
}  // namespace servescope::serving
