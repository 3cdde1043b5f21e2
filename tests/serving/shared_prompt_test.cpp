// Samples sharing a prompt, in the pool and the scheduler: fork shares every block with a
// reference count, the first write into a shared, partly filled block copies it
// (copy-on-write), the bytes saved follow the formula, and each sample reads only its own
// tokens (the fake forward pass reads every context back through the block tables).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "engine/core/error.h"
#include "engine/serving/kv_block_pool.h"
#include "engine/serving/scheduler.h"
#include "scheduler_test_support.h"

namespace servescope::serving {
namespace {

using serving::testing::FakeForward;
using serving::testing::iota_tokens;
using serving::testing::reference_output;
using serving::testing::reference_sample_output;
using serving::testing::run_step;
using telemetry::KvEvent;
using telemetry::KvEventKind;

constexpr int64_t kBlockSize = 4;
const KvLayout kLayout{2, 32, gguf::GgmlType::F16, kBlockSize};

// A sequence with `tokens` slots, all written.
void allocate_written(KvBlockPool& pool, SequenceId id, const std::vector<int32_t>& tokens) {
  pool.allocate(id, tokens);
  pool.cache_computed_blocks(id, tokens);
}

TEST(KvFork, SharesEveryBlockAndSavesWhatTheFormulaSays) {
  KvBlockPool pool(kLayout, 16);
  std::vector<KvEvent> events;
  pool.set_event_sink([&](const KvEvent& e) { events.push_back(e); });
  const std::vector<int32_t> prompt = iota_tokens(10);  // 3 blocks, the last holding 2 tokens
  allocate_written(pool, 0, prompt);
  pool.fork(0, 1);
  pool.fork(0, 2);

  EXPECT_EQ(pool.blocks_used(), 3);  // held once
  for (const BlockId b : pool.block_table(0)) EXPECT_EQ(pool.ref_count(b), 3);
  EXPECT_TRUE(std::ranges::equal(pool.block_table(1), pool.block_table(0)));
  EXPECT_EQ(pool.tokens_written(2), 10);
  const uint64_t per_block = kv_bytes_per_block(kLayout);
  // n separate requests would hold n x 3 blocks: sharing saves (n - 1) x 3.
  EXPECT_EQ(pool.usage().bytes_saved_by_sharing, 2 * 3 * per_block);
  ASSERT_EQ(events.back().kind, KvEventKind::kFork);
  EXPECT_EQ(events.back().sequence, 2);
  EXPECT_EQ(events.back().tokens, 10);
  EXPECT_EQ(events.back().blocks_used_after, 3);
  EXPECT_TRUE(pool.take_block_copies().empty());  // nothing copied yet

  // Freeing the parent leaves the blocks with the samples.
  pool.free(0);
  EXPECT_EQ(pool.blocks_used(), 3);
  for (const BlockId b : pool.block_table(1)) EXPECT_EQ(pool.ref_count(b), 2);
}

TEST(KvFork, TheFirstWriteIntoASharedPartialBlockCopiesIt) {
  KvBlockPool pool(kLayout, 16);
  std::vector<KvEvent> events;
  pool.set_event_sink([&](const KvEvent& e) { events.push_back(e); });
  allocate_written(pool, 0, iota_tokens(10));
  pool.fork(0, 1);
  pool.fork(0, 2);
  const BlockId partial = pool.block_table(0).back();

  pool.append(0);  // position 10 falls in the shared block: the parent takes a copy
  const BlockId copy = pool.block_table(0).back();
  EXPECT_NE(copy, partial);
  EXPECT_EQ(pool.ref_count(partial), 2);
  EXPECT_EQ(pool.ref_count(copy), 1);
  ASSERT_EQ(events.back().kind, KvEventKind::kCopyOnWrite);
  EXPECT_EQ(events.back().blocks, (std::vector<int32_t>{partial, copy}));
  EXPECT_EQ(events.back().tokens, 2);
  const std::vector<BlockCopy> copies = pool.take_block_copies();
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].from, partial);
  EXPECT_EQ(copies[0].to, copy);
  EXPECT_EQ(copies[0].slots, 2);

  pool.append(1);  // copies too
  pool.append(2);  // the last holder writes in place
  EXPECT_EQ(pool.block_table(2).back(), partial);
  EXPECT_EQ(pool.ref_count(partial), 1);
  EXPECT_EQ(pool.take_block_copies().size(), 1u);
  // Only the two full prompt blocks stay shared.
  EXPECT_EQ(pool.usage().bytes_saved_by_sharing, 2 * 2 * kv_bytes_per_block(kLayout));
  EXPECT_EQ(pool.blocks_used(), 5);
}

TEST(KvFork, AFullLastBlockIsNotCopiedAndACopyNeedsAFreeBlock) {
  KvBlockPool pool(kLayout, 3);
  allocate_written(pool, 0, iota_tokens(8));  // two full blocks
  pool.fork(0, 1);
  EXPECT_TRUE(pool.can_append(0));
  pool.append(0);  // a fresh block, as at any boundary
  EXPECT_TRUE(pool.take_block_copies().empty());
  EXPECT_EQ(pool.ref_count(pool.block_table(1).back()), 2);

  // No free block: a sample that must copy cannot append, and says so.
  KvBlockPool small(kLayout, 3);
  allocate_written(small, 0, iota_tokens(6));  // 2 blocks, the last partly filled
  small.fork(0, 1);
  small.allocate(2, iota_tokens(3, 50));  // the last free block
  EXPECT_FALSE(small.can_append(0));
  EXPECT_THROW(small.append(0), std::logic_error);
}

TEST(KvFork, RefusesAParentStillBeingWrittenOrAChildThatExists) {
  KvBlockPool pool(kLayout, 16);
  pool.allocate(0, iota_tokens(6));  // slots reserved, not written
  EXPECT_THROW(pool.fork(0, 1), std::logic_error);
  pool.cache_computed_blocks(0, iota_tokens(6));
  pool.fork(0, 1);
  EXPECT_THROW(pool.fork(0, 1), std::logic_error);
}

// --- the scheduler ----------------------------------------------------------------------------

TEST(SchedulerSamples, ThePromptIsComputedOnceAndEachSampleReadsOnlyItsOwnTokens) {
  KvBlockPool pool(kLayout, 32);
  Scheduler scheduler(SchedulerConfig{4, 64, 64}, pool);
  FakeForward forward(pool);
  const Request request{iota_tokens(10), 7, -1};
  const std::vector<SequenceId> ids = scheduler.submit_samples(request, 3);
  ASSERT_EQ(ids, (std::vector<SequenceId>{0, 1, 2}));

  const StepBatch prefill = run_step(scheduler, forward);
  ASSERT_EQ(prefill.sequences.size(), 1u);  // one prefill of the prompt, for all three
  EXPECT_EQ(prefill.prefill_tokens, 10);
  EXPECT_EQ(prefill.sequences[0].forks, (std::vector<SequenceId>{1, 2}));
  EXPECT_EQ(scheduler.running().size(), 3u);
  const uint64_t per_block = kv_bytes_per_block(kLayout);
  EXPECT_EQ(pool.usage().bytes_saved_by_sharing, 2 * 3 * per_block);
  EXPECT_EQ(scheduler.sequence(1).cached_prompt_tokens, 10);

  const StepBatch first_decode = run_step(scheduler, forward);
  EXPECT_EQ(first_decode.decode_tokens, 3);
  EXPECT_EQ(first_decode.prefill_tokens, 0);
  // Two samples copied the partly filled block; the full ones stay shared.
  EXPECT_EQ(pool.usage().bytes_saved_by_sharing, 2 * 2 * per_block);

  while (scheduler.has_unfinished()) run_step(scheduler, forward);
  EXPECT_EQ(scheduler.sequence(0).output_ids(), reference_output(request, 64));
  for (const SequenceId fork : {1, 2}) {
    EXPECT_EQ(scheduler.sequence(fork).output_ids(), reference_sample_output(request, fork, 64))
        << "sample " << fork;
  }
  EXPECT_EQ(pool.blocks_used(), 0);
}

TEST(SchedulerSamples, ASampleWithoutABatchSlotQueuesAndComputesItsContext) {
  KvBlockPool pool(kLayout, 32);
  Scheduler scheduler(SchedulerConfig{2, 64, 64}, pool);  // two slots for three samples
  FakeForward forward(pool);
  const Request request{iota_tokens(9), 5, -1};
  scheduler.submit_samples(request, 3);
  run_step(scheduler, forward);
  EXPECT_EQ(scheduler.running(), (std::vector<SequenceId>{0, 1}));
  EXPECT_EQ(scheduler.waiting().front(), 2);
  EXPECT_EQ(scheduler.sequence(2).output_length(), 1);  // its first token came with the others
  while (scheduler.has_unfinished()) run_step(scheduler, forward);
  for (const SequenceId fork : {1, 2}) {
    EXPECT_EQ(scheduler.sequence(fork).output_ids(), reference_sample_output(request, fork, 64));
  }
  EXPECT_EQ(scheduler.sequence(0).output_ids(), reference_output(request, 64));
}

TEST(SchedulerSamples, CancellingThePromptsOwnerBeforeItsLogitsEndsItsSamples) {
  KvBlockPool pool(kLayout, 32);
  Scheduler scheduler(SchedulerConfig{4, 4, 64}, pool);  // a 4-token budget: prefill in chunks
  FakeForward forward(pool);
  scheduler.submit_samples(Request{iota_tokens(10), 5, -1}, 3);
  run_step(scheduler, forward);  // the prompt's first chunk
  EXPECT_TRUE(scheduler.finish(2));  // one sample cancelled while it waits
  EXPECT_TRUE(scheduler.has_unfinished());
  EXPECT_TRUE(scheduler.finish(0));
  EXPECT_FALSE(scheduler.has_unfinished());
  for (const SequenceId id : {0, 1, 2}) {
    EXPECT_EQ(scheduler.sequence(id).finish_reason, FinishReason::kCancelled) << id;
  }
  EXPECT_EQ(scheduler.take_finished().size(), 3u);
  EXPECT_EQ(pool.blocks_used(), 0);
}

TEST(SchedulerSamples, RefusesNoSamplesAndSamplesWithoutAKvCache) {
  KvBlockPool pool(kLayout, 32);
  Scheduler scheduler(SchedulerConfig{4, 64, 64}, pool);
  EXPECT_THROW(scheduler.submit_samples(Request{iota_tokens(4), 5, -1}, 0), InputError);
  SchedulerConfig no_cache{4, 64, 64};
  no_cache.keep_kv = false;
  Scheduler forgetful(no_cache, pool);
  EXPECT_THROW(forgetful.submit_samples(Request{iota_tokens(4), 5, -1}, 2), InputError);
  EXPECT_NO_THROW(forgetful.submit_samples(Request{iota_tokens(4), 5, -1}, 1));
}

}  // namespace
}  // namespace servescope::serving
