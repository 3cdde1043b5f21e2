// Scheduler: input checks, chunked prefill under the token budget, decode-first batches, batch
// size, preemption of the newest request, cancellation, and a randomized property test of the
// invariants over many steps.
#include "engine/serving/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <ostream>
#include <random>
#include <set>
#include <vector>

#include "engine/core/error.h"
#include "engine/telemetry/metrics.h"
#include "scheduler_test_support.h"

namespace servescope::serving {
namespace {

using serving::testing::FakeForward;
using serving::testing::iota_tokens;
using serving::testing::reference_output;
using serving::testing::reference_sample_output;
using serving::testing::run_step;

KvLayout small_layout(int64_t block_size = 4) {
  return KvLayout{2, 32, gguf::GgmlType::F16, block_size};
}

// Runs steps until every request finished; fails if that takes more than max_steps.
void run_to_completion(Scheduler& scheduler, FakeForward& forward, int max_steps = 10000) {
  for (int step = 0; scheduler.has_unfinished(); ++step) {
    ASSERT_LT(step, max_steps) << "no progress: deadlock?";
    run_step(scheduler, forward);
  }
}

TEST(SchedulerInput, RejectsRequestsItCannotServe) {
  KvBlockPool pool(small_layout(), 8);  // 32 tokens
  Scheduler scheduler(SchedulerConfig{4, 16, 40}, pool);
  EXPECT_THROW(scheduler.submit(Request{{}, 4, -1}), InputError);
  EXPECT_THROW(scheduler.submit(Request{{1, 2}, 0, -1}), InputError);
  EXPECT_THROW(scheduler.submit(Request{iota_tokens(41), 1, -1}), InputError);  // > context
  // The pool, not the model's context of 40, limits a request to 32 tokens: the prompt's error
  // says so and names the setting that raises it.
  try {
    scheduler.submit(Request{iota_tokens(33), 1, -1});
    ADD_FAILURE() << "a prompt longer than the pool holds was accepted";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(),
                 "the prompt needs 33 tokens; the KV budget of 8.0 KiB holds 32 tokens; raise the "
                 "KV budget");
  }
  EXPECT_EQ(scheduler.context_limit(), 32);
  EXPECT_NO_THROW(scheduler.submit(Request{iota_tokens(32), 1, -1}));     // fills the pool
  EXPECT_NO_THROW(scheduler.submit(Request{iota_tokens(30), 1000, -1}));  // stops at 32 tokens
}

// A request asking for more than the pool holds grows until it fills the pool, then stops as it
// would at the end of the model's context.
TEST(Scheduler, ARequestGrowsOnlyAsFarAsThePoolHolds) {
  KvBlockPool pool(small_layout(), 8);  // 32 tokens
  SchedulerConfig config{4, 16, 1 << 17};
  config.kv_budget_setting = "--kv-bytes";
  Scheduler scheduler(config, pool);
  FakeForward forward(pool);
  const SequenceId id = scheduler.submit(Request{iota_tokens(30), 100, -1});
  EXPECT_THROW(scheduler.submit(Request{iota_tokens(40), 1, -1}), InputError);
  run_to_completion(scheduler, forward);
  EXPECT_EQ(scheduler.sequence(id).finish_reason, FinishReason::kContextFull);
  EXPECT_EQ(scheduler.sequence(id).tokens.size(), 32u);
}

TEST(SchedulerInput, RejectsConfigurationsThatCannotMakeProgress) {
  KvBlockPool pool(small_layout(), 8);
  EXPECT_THROW(Scheduler(SchedulerConfig{0, 16, 40}, pool), InputError);
  EXPECT_THROW(Scheduler(SchedulerConfig{8, 4, 40}, pool), InputError);
  EXPECT_THROW(Scheduler(SchedulerConfig{4, 16, 0}, pool), InputError);
}

TEST(SchedulerInput, ARejectedRequestDoesNotDisturbTheOthers) {
  KvBlockPool pool(small_layout(), 8);
  Scheduler scheduler(SchedulerConfig{4, 16, 64}, pool);
  FakeForward forward(pool);
  const Request ok{iota_tokens(5), 6, -1};
  const SequenceId a = scheduler.submit(ok);
  EXPECT_THROW(scheduler.submit(Request{iota_tokens(40), 1, -1}), InputError);
  const SequenceId b = scheduler.submit(ok);
  run_to_completion(scheduler, forward);
  EXPECT_EQ(scheduler.sequence(a).output_ids(), reference_output(ok, 64));
  EXPECT_EQ(scheduler.sequence(b).output_ids(), reference_output(ok, 64));
}

TEST(Scheduler, ChunksALongPromptAndDecodesOthersFirst) {
  KvBlockPool pool(small_layout(), 32);
  Scheduler scheduler(SchedulerConfig{4, 16, 128}, pool);
  FakeForward forward(pool);
  const SequenceId a = scheduler.submit(Request{iota_tokens(3), 10, -1});
  StepBatch s0 = run_step(scheduler, forward);
  EXPECT_EQ(s0.admitted, std::vector<SequenceId>{a});
  EXPECT_EQ(s0.prefill_tokens, 3);

  const SequenceId b = scheduler.submit(Request{iota_tokens(40, 100), 2, -1});
  std::vector<int64_t> chunks;
  while (scheduler.sequence(b).output_length() == 0) {
    const StepBatch step = run_step(scheduler, forward);
    ASSERT_EQ(step.sequences.size(), 2u);
    EXPECT_EQ(step.sequences[0].sequence, a);  // the decode comes first
    EXPECT_FALSE(step.sequences[0].is_prefill);
    EXPECT_EQ(step.decode_tokens, 1);
    EXPECT_TRUE(step.sequences[1].is_prefill);
    EXPECT_LE(step.tokens(), 16);
    EXPECT_EQ(step.sequences[1].samples_next_token,
              step.sequences[1].start + step.sequences[1].count == 40);
    chunks.push_back(step.sequences[1].count);
  }
  EXPECT_EQ(chunks, (std::vector<int64_t>{15, 15, 10}));
  run_to_completion(scheduler, forward);
  EXPECT_EQ(scheduler.sequence(b).output_ids(),
            reference_output(Request{iota_tokens(40, 100), 2, -1}, 128));
  EXPECT_EQ(pool.blocks_used(), 0);
}

TEST(Scheduler, DescribesEachStepForTelemetry) {
  KvBlockPool pool(small_layout(), 32);
  const SchedulerConfig config{4, 16, 128};
  Scheduler scheduler(config, pool);
  FakeForward forward(pool);
  scheduler.submit(Request{iota_tokens(3), 10, -1});
  run_step(scheduler, forward);
  scheduler.submit(Request{iota_tokens(40, 100), 2, -1});
  const StepBatch batch = scheduler.schedule();
  const telemetry::StepRecord record = step_record_counts(batch, config, pool);
  EXPECT_EQ(record.step_index, 1);
  EXPECT_EQ(record.decode_tokens, 1);
  EXPECT_EQ(record.prefill_tokens, 15);
  EXPECT_EQ(record.sequences, 2);
  EXPECT_DOUBLE_EQ(telemetry::batch_occupancy(record), 0.5);
  EXPECT_EQ(record.kv_blocks_used, 1 + 10);  // 4 slots for the decoder, 40 for the prompt
  EXPECT_EQ(record.kv_blocks_used + record.kv_blocks_free, 32);
  const auto work = step_work(batch);
  ASSERT_EQ(work.size(), 2u);
  EXPECT_EQ(work[0].new_tokens, 1);
  EXPECT_EQ(work[0].cached_tokens, 3);
  EXPECT_TRUE(work[0].samples_logits);
  EXPECT_EQ(work[1].new_tokens, 15);
  EXPECT_EQ(work[1].cached_tokens, 0);
  EXPECT_FALSE(work[1].samples_logits);
  scheduler.complete_step(batch, forward.run(batch));
}

TEST(Scheduler, RunsAtMostMaxBatchSizeSequencesInArrivalOrder) {
  KvBlockPool pool(small_layout(), 64);
  Scheduler scheduler(SchedulerConfig{2, 16, 128}, pool);
  FakeForward forward(pool);
  for (int i = 0; i < 5; ++i) scheduler.submit(Request{iota_tokens(3, i * 10), 3, -1});
  const StepBatch first = run_step(scheduler, forward);
  EXPECT_EQ(first.admitted, (std::vector<SequenceId>{0, 1}));
  EXPECT_EQ(scheduler.running().size(), 2u);
  EXPECT_EQ(scheduler.waiting().size(), 3u);
  run_to_completion(scheduler, forward);
  for (SequenceId id = 1; id < 5; ++id) {
    EXPECT_LE(scheduler.sequence(id - 1).first_scheduled_step,
              scheduler.sequence(id).first_scheduled_step);
  }
}

TEST(Scheduler, StopsAtTheStopTokenAndAtTheContextLength) {
  KvBlockPool pool(small_layout(), 32);
  Scheduler scheduler(SchedulerConfig{4, 16, 12}, pool);
  FakeForward forward(pool);
  const Request long_run{iota_tokens(8), 100, -1};
  const SequenceId full = scheduler.submit(long_run);
  const std::vector<int32_t> expected = reference_output(long_run, 12);
  const Request stopping{iota_tokens(8), 100, expected[1]};
  const SequenceId stopped = scheduler.submit(stopping);
  run_to_completion(scheduler, forward);
  EXPECT_EQ(scheduler.sequence(full).finish_reason, FinishReason::kContextFull);
  EXPECT_EQ(scheduler.sequence(full).tokens.size(), 12u);
  EXPECT_EQ(scheduler.sequence(full).output_ids(), expected);
  EXPECT_EQ(scheduler.sequence(stopped).finish_reason, FinishReason::kStopToken);
  EXPECT_EQ(scheduler.sequence(stopped).output_ids(), reference_output(stopping, 12));
  EXPECT_EQ(scheduler.take_finished().size(), 2u);
  EXPECT_TRUE(scheduler.take_finished().empty());
}

// take_finished hands the finished sequences over and the scheduler forgets them: a long run
// holds only what waits and runs.
TEST(Scheduler, TakeFinishedHandsOverAndForgets) {
  KvBlockPool pool(small_layout(), 16);
  Scheduler scheduler(SchedulerConfig{2, 16, 64}, pool);
  FakeForward forward(pool);
  const Request r{iota_tokens(5), 3, -1};
  for (int i = 0; i < 3; ++i) scheduler.submit(r);
  EXPECT_EQ(scheduler.tracked_sequences(), 3u);
  run_to_completion(scheduler, forward);
  const std::vector<Sequence> finished = scheduler.take_finished();
  ASSERT_EQ(finished.size(), 3u);
  for (const Sequence& s : finished) EXPECT_EQ(s.output_ids(), reference_output(r, 64));
  EXPECT_EQ(scheduler.tracked_sequences(), 0u);
  EXPECT_FALSE(scheduler.knows(finished[0].id));
  EXPECT_THROW(scheduler.sequence(finished[0].id), std::out_of_range);
  EXPECT_FALSE(scheduler.finish(finished[0].id));  // gone: nothing to cancel
  EXPECT_EQ(scheduler.submitted(), 3);
}

// A running sequence keeps its batch slot until it finishes or is preempted; the freed slot
// is the lowest free one for the next admission.
TEST(Scheduler, BatchSlotsStayWithTheirSequence) {
  KvBlockPool pool(small_layout(), 32);
  Scheduler scheduler(SchedulerConfig{3, 16, 64}, pool);
  FakeForward forward(pool);
  const SequenceId a = scheduler.submit(Request{iota_tokens(3), 6, -1});
  const SequenceId b = scheduler.submit(Request{iota_tokens(3, 10), 2, -1});
  const SequenceId c = scheduler.submit(Request{iota_tokens(3, 20), 6, -1});
  const SequenceId d = scheduler.submit(Request{iota_tokens(3, 30), 6, -1});
  std::map<SequenceId, std::set<int64_t>> slots;
  while (scheduler.has_unfinished()) {
    const StepBatch batch = run_step(scheduler, forward);
    for (const ScheduledSequence& e : batch.sequences) slots[e.sequence].insert(e.slot);
  }
  EXPECT_EQ(slots[a], std::set<int64_t>{0});
  EXPECT_EQ(slots[b], std::set<int64_t>{1});
  EXPECT_EQ(slots[c], std::set<int64_t>{2});
  EXPECT_EQ(slots[d], std::set<int64_t>{1});  // b's, once b finished
}

TEST(Scheduler, PreemptsTheNewestWhenBlocksRunOutAndResumesIt) {
  // 6 blocks of 4 tokens; each request grows to 4 + 9 = 13 tokens = 4 blocks: both cannot
  // hold their full length at once.
  KvBlockPool pool(small_layout(), 6);
  std::vector<telemetry::KvEvent> events;
  pool.set_event_sink([&](const telemetry::KvEvent& e) { events.push_back(e); });
  Scheduler scheduler(SchedulerConfig{4, 16, 64}, pool);
  FakeForward forward(pool);
  const Request ra{iota_tokens(4), 10, -1}, rb{iota_tokens(4, 50), 10, -1};
  const SequenceId a = scheduler.submit(ra);
  const SequenceId b = scheduler.submit(rb);
  std::vector<SequenceId> preempted;
  for (int step = 0; scheduler.has_unfinished() && step < 100; ++step) {
    const StepBatch batch = run_step(scheduler, forward);
    preempted.insert(preempted.end(), batch.preempted.begin(), batch.preempted.end());
  }
  ASSERT_FALSE(scheduler.has_unfinished());
  ASSERT_FALSE(preempted.empty());
  EXPECT_TRUE(std::ranges::all_of(preempted, [&](SequenceId id) { return id == b; }));
  EXPECT_EQ(scheduler.sequence(a).preemptions, 0);
  EXPECT_GE(scheduler.sequence(b).preemptions, 1);
  EXPECT_EQ(scheduler.sequence(a).output_ids(), reference_output(ra, 64));
  EXPECT_EQ(scheduler.sequence(b).output_ids(), reference_output(rb, 64));
  EXPECT_TRUE(std::ranges::any_of(events, [](const telemetry::KvEvent& e) {
    return e.kind == telemetry::KvEventKind::kPreempt;
  }));
  EXPECT_EQ(pool.blocks_used(), 0);
}

TEST(Scheduler, FinishFromOutsideFreesBlocksAndSkipsTheSequence) {
  KvBlockPool pool(small_layout(), 16);
  Scheduler scheduler(SchedulerConfig{1, 16, 64}, pool);
  FakeForward forward(pool);
  const SequenceId a = scheduler.submit(Request{iota_tokens(6), 50, -1});
  const SequenceId b = scheduler.submit(Request{iota_tokens(6, 20), 50, -1});
  run_step(scheduler, forward);
  EXPECT_GT(pool.blocks_used(), 0);
  scheduler.finish(b);  // still waiting
  const StepBatch batch = scheduler.schedule();
  const std::vector<int32_t> next = forward.run(batch);
  scheduler.finish(a);  // cancelled while its step ran: the step's result is dropped
  scheduler.complete_step(batch, next);
  EXPECT_EQ(scheduler.sequence(a).finish_reason, FinishReason::kCancelled);
  EXPECT_EQ(scheduler.sequence(b).finish_reason, FinishReason::kCancelled);
  EXPECT_FALSE(scheduler.has_unfinished());
  EXPECT_EQ(pool.blocks_used(), 0);
  EXPECT_TRUE(scheduler.schedule().empty());
}

TEST(Scheduler, EachBatchMustBeCompletedBeforeTheNext) {
  KvBlockPool pool(small_layout(), 16);
  Scheduler scheduler(SchedulerConfig{2, 16, 64}, pool);
  scheduler.submit(Request{iota_tokens(6), 5, -1});
  const StepBatch batch = scheduler.schedule();
  EXPECT_THROW(scheduler.schedule(), std::logic_error);
  EXPECT_THROW(scheduler.complete_step(batch, std::vector<int32_t>{}), std::logic_error);
  EXPECT_NO_THROW(scheduler.complete_step(batch, std::vector<int32_t>{7}));
}

// ---- Property test: random arrivals, many steps, invariants checked after every schedule ----

struct PropertyCase {
  uint32_t seed;
  int64_t blocks;
  int64_t block_size;
  int64_t max_batch_size;
  int64_t token_budget;
};

std::ostream& operator<<(std::ostream& os, const PropertyCase& c) {
  return os << "seed " << c.seed << ", " << c.blocks << " blocks of " << c.block_size << ", batch "
            << c.max_batch_size << ", budget " << c.token_budget;
}

// first_sample_of: each sample of a prompt submitted with submit_samples -> the first one.
void check_pool_invariants(const Scheduler& scheduler, const KvBlockPool& pool,
                           const std::map<SequenceId, SequenceId>& first_sample_of = {}) {
  // Who holds each block, counted from the live sequences' block tables.
  std::map<BlockId, int32_t> holders;
  std::map<BlockId, std::set<SequenceId>> prompts_holding;  // by first sample
  for (const SequenceId id : scheduler.running()) {
    ASSERT_TRUE(pool.has_sequence(id));
    const auto table = pool.block_table(id);
    EXPECT_EQ(static_cast<int64_t>(table.size()),
              blocks_for_tokens(pool.sequence_tokens(id), pool.layout().block_size));
    const std::set<BlockId> distinct(table.begin(), table.end());
    EXPECT_EQ(distinct.size(), table.size()) << "a block twice in one table";
    const auto first = first_sample_of.find(id);
    for (const BlockId b : table) {
      ++holders[b];
      prompts_holding[b].insert(first == first_sample_of.end() ? id : first->second);
    }
  }
  for (const SequenceId id : scheduler.waiting()) EXPECT_FALSE(pool.has_sequence(id));
  for (BlockId b = 0; b < pool.blocks_total(); ++b) {
    const int32_t expected = holders.contains(b) ? holders[b] : 0;
    EXPECT_EQ(pool.ref_count(b), expected) << "block " << b;
    // Two live sequences share a block only through the prefix cache, or as samples of one
    // prompt.
    if (expected > 1) {
      EXPECT_TRUE(pool.holds_cached_prefix(b) || prompts_holding[b].size() == 1) << "block " << b;
    }
  }
  EXPECT_EQ(pool.blocks_used(), static_cast<int64_t>(holders.size()));
}

class SchedulerProperty : public ::testing::TestWithParam<PropertyCase> {};

TEST_P(SchedulerProperty, InvariantsHoldUnderRandomArrivals) {
  const PropertyCase c = GetParam();
  constexpr int64_t kContext = 64;
  KvBlockPool pool(KvLayout{2, 32, gguf::GgmlType::Q8_0, c.block_size}, c.blocks);
  Scheduler scheduler(SchedulerConfig{c.max_batch_size, c.token_budget, kContext}, pool);
  FakeForward forward(pool);
  std::mt19937 rng(c.seed);
  const auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  // Prompts start from a few shared system prompts, so prefix blocks are shared.
  const std::vector<std::vector<int32_t>> system_prompts = {iota_tokens(9, 1), iota_tokens(13, 30)};

  std::map<SequenceId, Request> submitted;
  std::map<SequenceId, SequenceId> first_sample_of;  // the further samples of a prompt
  int64_t total_preemptions = 0;
  int64_t steps = 0;
  constexpr int kRequests = 150;
  while (static_cast<int>(submitted.size()) < kRequests || scheduler.has_unfinished()) {
    ASSERT_LT(steps, 20000) << "no progress: deadlock?";
    // Arrivals: zero to two requests before this step.
    for (int64_t n = uniform(0, 3) / 2; n > 0 && submitted.size() < kRequests; --n) {
      Request r;
      if (uniform(0, 1) == 1) r.prompt_ids = system_prompts[static_cast<size_t>(uniform(0, 1))];
      const int64_t own = uniform(1, 20);
      for (int64_t i = 0; i < own; ++i)
        r.prompt_ids.push_back(static_cast<int32_t>(uniform(0, 60)));
      r.max_tokens = uniform(1, 24);
      r.stop_token = uniform(0, 3) == 0 ? static_cast<int32_t>(uniform(0, 60)) : -1;
      try {
        // One request in five asks for two or three samples of its prompt.
        const int64_t samples = uniform(0, 4) == 0 ? uniform(2, 3) : 1;
        const std::vector<SequenceId> ids = scheduler.submit_samples(r, samples);
        for (const SequenceId id : ids) submitted.emplace(id, r);
        for (size_t k = 1; k < ids.size(); ++k) first_sample_of[ids[k]] = ids.front();
      } catch (const InputError&) {
        // Too large for this pool: rejected up front, must not affect the others.
      }
    }

    const StepBatch batch = scheduler.schedule();
    ++steps;
    EXPECT_LE(static_cast<int64_t>(batch.sequences.size()), c.max_batch_size);
    EXPECT_LE(batch.tokens(), c.token_budget);
    EXPECT_LE(static_cast<int64_t>(scheduler.running().size()), c.max_batch_size);
    std::set<SequenceId> in_batch;
    for (const ScheduledSequence& e : batch.sequences) {
      EXPECT_TRUE(in_batch.insert(e.sequence).second) << "scheduled twice in one step";
      EXPECT_EQ(e.count, static_cast<int64_t>(e.tokens.size()));
      if (!e.is_prefill) {
        EXPECT_EQ(e.count, 1);
      }
    }
    check_pool_invariants(scheduler, pool, first_sample_of);
    total_preemptions += static_cast<int64_t>(batch.preempted.size());
    if (!batch.empty()) {
      const std::vector<int32_t> next = forward.run(batch);
      scheduler.complete_step(batch, next, forward.fork_tokens());
    }
    check_pool_invariants(scheduler, pool, first_sample_of);
  }

  EXPECT_GT(steps, 250);  // a long run
  EXPECT_GT(total_preemptions, 0) << "the case should exercise preemption";
  EXPECT_EQ(pool.blocks_used(), 0) << "blocks leaked";
  EXPECT_TRUE(pool.usage().sequences.empty());
  int64_t cached_tokens = 0;
  for (const auto& [id, request] : submitted) {
    const Sequence& s = scheduler.sequence(id);
    EXPECT_EQ(s.status, SequenceStatus::kFinished);
    EXPECT_EQ(s.output_ids(), first_sample_of.contains(id)
                                  ? reference_sample_output(request, id, kContext)
                                  : reference_output(request, kContext))
        << "request " << id;
    cached_tokens += s.cached_prompt_tokens;
    // FCFS: nobody is first scheduled before an earlier arrival. Samples of a prompt are
    // scheduled with their first sample, which computes it.
    const auto scheduled_at = [&](SequenceId sequence) {
      const auto first = first_sample_of.find(sequence);
      return scheduler.sequence(first == first_sample_of.end() ? sequence : first->second)
          .first_scheduled_step;
    };
    if (id > 0 && submitted.contains(id - 1)) {
      EXPECT_LE(scheduled_at(id - 1), scheduled_at(id));
    }
  }
  EXPECT_GT(cached_tokens, 0) << "the case should exercise prefix sharing";
  EXPECT_FALSE(first_sample_of.empty()) << "the case should exercise samples of a prompt";
}

INSTANTIATE_TEST_SUITE_P(FixedSeeds, SchedulerProperty,
                         ::testing::Values(PropertyCase{1, 24, 4, 4, 16},
                                           PropertyCase{2, 24, 4, 8, 32},
                                           PropertyCase{3, 12, 8, 3, 8},
                                           PropertyCase{4, 40, 4, 16, 64},
                                           PropertyCase{5, 17, 4, 2, 5}));

}  // namespace
}  // namespace servescope::serving
