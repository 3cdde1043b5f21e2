// TelemetryFolder on synthetic records: counts, the KV pool rebuilt from its events (checked
// against block states worked out by hand from the event rules in kv_event.h), tokens per
// second, the history bound and which panels each record kind marks as changed.
#include <gtest/gtest.h>

#include "app/gui/panels/panel_host.h"
#include "app/gui/panels/telemetry_folder.h"

namespace servescope::gui {
namespace {

using telemetry::KvEvent;
using telemetry::KvEventKind;
using telemetry::StepRecord;
using telemetry::TelemetryItem;

constexpr int64_t kBlockSize = 4;

TelemetryFolder folder_with_blocks(int64_t blocks, size_t history = 512) {
  TelemetryFolder folder(history);
  folder.reset({blocks, kBlockSize, 100});
  return folder;
}

StepRecord step(int64_t index, int64_t prefill, int64_t decode) {
  StepRecord s;
  s.step_index = index;
  s.prefill_tokens = prefill;
  s.decode_tokens = decode;
  return s;
}

KvEvent event(KvEventKind kind, int64_t sequence, std::vector<int32_t> blocks, int64_t tokens,
              int64_t used_after) {
  KvEvent e;
  e.kind = kind;
  e.sequence = sequence;
  e.blocks = std::move(blocks);
  e.tokens = tokens;
  e.blocks_used_after = used_after;
  return e;
}

KvEvent write(int64_t sequence, int32_t block, int64_t offset, int64_t position, int64_t tokens,
              int64_t used_after) {
  KvEvent e = event(KvEventKind::kWrite, sequence, {block}, tokens, used_after);
  e.offset = offset;
  e.position = position;
  return e;
}

TEST(TelemetryFolder, CountsStepsRequestsAndTokens) {
  TelemetryFolder folder = folder_with_blocks(8);
  telemetry::RequestRecord request;
  request.request_id = 3;
  const std::vector<TelemetryItem> items = {step(0, 10, 0), step(1, 0, 2), request, step(2, 3, 1)};
  folder.fold(items, 1000.0);
  EXPECT_EQ(folder.counts().steps, 3);
  EXPECT_EQ(folder.counts().requests, 1);
  EXPECT_EQ(folder.counts().prefill_tokens, 13);
  EXPECT_EQ(folder.counts().decode_tokens, 3);
  ASSERT_EQ(folder.steps().size(), 3u);
  EXPECT_EQ(folder.steps().back().step_index, 2);
  EXPECT_EQ(folder.requests().front().request_id, 3);
}

// Each request's life from the folded records: queued from its arrival, then its prompt.
TEST(TelemetryFolder, FoldsArrivalsStepsAndRequestsIntoEachRequestsLife) {
  TelemetryFolder folder = folder_with_blocks(8);
  StepRecord prefill = step(0, 6, 0);
  prefill.start_ms = 25.0;
  prefill.end_ms = 30.0;
  prefill.batch = {{4, 0, telemetry::SequencePhase::kPrefill, 0, {1, 2, 3, 4, 5, 6}, 9}};
  folder.fold(std::vector<TelemetryItem>{telemetry::RequestArrival{4, 6, 10.0}, prefill}, 0.0);
  const std::vector<const telemetry::RequestLife*> lives = folder.timeline().lives();
  ASSERT_EQ(lives.size(), 1u);
  ASSERT_EQ(lives[0]->stretches.size(), 2u);
  EXPECT_EQ(lives[0]->stretches[0].stage, telemetry::LifeStage::kQueued);
  EXPECT_EQ(lives[0]->stretches[0].end_ms - lives[0]->stretches[0].start_ms, 15.0);
  EXPECT_EQ(lives[0]->stretches[1].tokens, 6);
  EXPECT_EQ(lives[0]->stretches[1].end_ms, 30.0);  // running: until the latest engine time
  folder.reset({8, kBlockSize, 100});
  EXPECT_TRUE(folder.timeline().empty());
}

StepRecord timed(StepRecord s, double wall_ms) {
  s.wall_ms = wall_ms;
  return s;
}

TEST(TelemetryFolder, TokensPerSecondIsTheThroughputOfTheLastSecondsSteps) {
  TelemetryFolder folder = folder_with_blocks(8);
  folder.fold(std::vector<TelemetryItem>{timed(step(0, 40, 0), 10.0)}, 100.0);
  // Slow motion: two decode steps of 2 ms each, drained 400 ms apart.
  folder.fold(std::vector<TelemetryItem>{timed(step(1, 0, 4), 2.0)}, 500.0);
  folder.fold(std::vector<TelemetryItem>{timed(step(2, 0, 4), 2.0)}, 900.0);
  // Tokens over step time, not over the wall time the pauses stretched.
  EXPECT_DOUBLE_EQ(folder.tokens_per_s(1000.0), 48.0 / 14.0 * 1000.0);
  EXPECT_DOUBLE_EQ(folder.tokens_per_s(1200.0), 8.0 / 4.0 * 1000.0);  // the first step left
  EXPECT_DOUBLE_EQ(folder.tokens_per_s(2500.0), 0.0);
}

TEST(TelemetryFolder, KeepsOnlyTheMostRecentHistory) {
  TelemetryFolder folder = folder_with_blocks(8, 4);
  std::vector<TelemetryItem> items;
  for (int64_t i = 0; i < 10; ++i) items.push_back(step(i, 0, 1));
  folder.fold(items, 0.0);
  EXPECT_EQ(folder.counts().steps, 10);
  ASSERT_EQ(folder.steps().size(), 4u);
  EXPECT_EQ(folder.steps().front().step_index, 6);
}

TEST(TelemetryFolder, RebuildsTheBlockPoolFromItsEvents) {
  TelemetryFolder folder = folder_with_blocks(6);
  // Sequence 0: a 6-token prompt in blocks 2 and 4, written, its full block indexed, then a
  // decode token; sequence 1 shares block 2 through the prefix cache and takes block 5.
  folder.fold(
      std::vector<TelemetryItem>{
          event(KvEventKind::kAllocate, 0, {2, 4}, 6, 2),
          write(0, 2, 0, 0, 4, 2),
          write(0, 4, 0, 4, 2, 2),
          event(KvEventKind::kIndex, 0, {2}, 4, 2),
          write(0, 4, 2, 6, 1, 2),
          event(KvEventKind::kPrefixHit, 1, {2}, 4, 2),
          event(KvEventKind::kAllocate, 1, {5}, 5, 3),
          write(1, 5, 0, 4, 1, 3),
      },
      0.0);
  const auto& b = folder.blocks();
  EXPECT_EQ(folder.blocks_used(), 3);
  EXPECT_EQ(b[2].ref_count, 2);
  EXPECT_TRUE(b[2].prefix_shared);
  EXPECT_TRUE(b[2].cached_prefix);
  EXPECT_EQ(b[2].fill, 4);
  EXPECT_EQ(b[4].fill, 3);
  EXPECT_EQ(b[5].fill, 1);
  EXPECT_EQ(b[5].owner, 1);
  // What the blocks in use hold, the shared block 2 once: 4 + 3 + 1 (the two sequences'
  // own contexts are 7 and 5 tokens, 4 of them the same).
  EXPECT_EQ(folder.retained_tokens(), 4 + 3 + 1);
  EXPECT_EQ(folder.kv_bytes_used(), 300u);

  // Sequence 0 finishes: block 4 (not indexed) loses its KV, block 2 stays with sequence 1.
  folder.fold(std::vector<TelemetryItem>{event(KvEventKind::kFree, 0, {2, 4}, 7, 2)}, 0.0);
  EXPECT_EQ(folder.blocks_used(), 2);
  EXPECT_EQ(b[2].ref_count, 1);
  EXPECT_EQ(b[4].ref_count, 0);
  EXPECT_EQ(b[4].fill, 0);
  EXPECT_EQ(folder.retained_tokens(), 5);

  // Sequence 1 finishes; block 2 is free but keeps its cached prefix until evicted.
  folder.fold(std::vector<TelemetryItem>{event(KvEventKind::kFree, 1, {2, 5}, 5, 0)}, 0.0);
  EXPECT_EQ(folder.blocks_used(), 0);
  EXPECT_TRUE(b[2].cached_prefix);
  EXPECT_EQ(b[2].fill, 4);
  folder.fold(std::vector<TelemetryItem>{event(KvEventKind::kEvict, -1, {2}, 4, 0)}, 0.0);
  EXPECT_FALSE(b[2].cached_prefix);
  EXPECT_EQ(b[2].fill, 0);
  EXPECT_EQ(folder.counts().inconsistent_kv_events, 0);
  EXPECT_EQ(folder.counts().kv_events, 11);
  EXPECT_EQ(folder.counts().kv_events_by_kind[static_cast<size_t>(KvEventKind::kWrite)], 4);
}

// Samples of one prompt: a fork shares every block (reference counts up, nothing new in use),
// a copy-on-write moves one sample to a copy of the partly filled block; the tokens held count
// each block once, and the sample's life starts decoding at its fork.
TEST(TelemetryFolder, FoldsForksAndCopiesOnWrite) {
  TelemetryFolder folder = folder_with_blocks(6);
  KvEvent fork = event(KvEventKind::kFork, 1, {2, 4}, 6, 2);
  fork.time_ms = 30.0;
  folder.fold(
      std::vector<TelemetryItem>{
          telemetry::RequestArrival{1, 6, 10.0},
          event(KvEventKind::kAllocate, 0, {2, 4}, 6, 2),
          write(0, 2, 0, 0, 4, 2),
          write(0, 4, 0, 4, 2, 2),
          fork,
      },
      0.0);
  const auto& b = folder.blocks();
  EXPECT_EQ(folder.blocks_used(), 2);
  EXPECT_EQ(b[2].ref_count, 2);
  EXPECT_EQ(b[4].ref_count, 2);
  EXPECT_EQ(folder.retained_tokens(), 6);
  EXPECT_EQ(folder.sequence_kv(1)->blocks, 2);
  EXPECT_EQ(folder.sequence_kv(1)->tokens_written, 6);
  const std::vector<const telemetry::RequestLife*> lives = folder.timeline().lives();
  ASSERT_EQ(lives.size(), 1u);
  ASSERT_EQ(lives[0]->stretches.size(), 2u);
  EXPECT_EQ(lives[0]->stretches[0].stage, telemetry::LifeStage::kQueued);
  EXPECT_DOUBLE_EQ(lives[0]->stretches[1].start_ms, 30.0);
  EXPECT_EQ(lives[0]->stretches[1].stage, telemetry::LifeStage::kDecode);

  folder.fold(std::vector<TelemetryItem>{event(KvEventKind::kCopyOnWrite, 0, {4, 5}, 2, 3),
                                         write(0, 5, 2, 6, 1, 3), write(1, 4, 2, 6, 1, 3)},
              0.0);
  EXPECT_EQ(folder.blocks_used(), 3);
  EXPECT_EQ(b[4].ref_count, 1);
  EXPECT_EQ(b[5].ref_count, 1);
  EXPECT_EQ(b[5].owner, 0);
  EXPECT_EQ(b[5].fill, 3);
  EXPECT_EQ(b[4].fill, 3);
  EXPECT_EQ(folder.retained_tokens(), 4 + 3 + 3);
  EXPECT_EQ(folder.counts().inconsistent_kv_events, 0);
}

TEST(TelemetryFolder, KeepsEachSequencesKvShareAfterItReleasesItsBlocks) {
  TelemetryFolder folder = folder_with_blocks(6);
  // Sequence 3 shares 4 cached tokens (block 2), takes block 5, writes up to position 5, then
  // appends block 1 for its seventh token; sequence 4 is preempted after one block.
  folder.fold(
      std::vector<TelemetryItem>{
          event(KvEventKind::kPrefixHit, 3, {2}, 4, 1),
          event(KvEventKind::kAllocate, 3, {5}, 6, 2),
          write(3, 5, 0, 4, 2, 2),
          event(KvEventKind::kAppend, 3, {1}, 1, 3),
          write(3, 1, 0, 8, 1, 3),
          event(KvEventKind::kAllocate, 4, {0}, 3, 4),
          write(4, 0, 0, 0, 3, 4),
      },
      0.0);
  ASSERT_TRUE(folder.sequence_kv(3).has_value());
  EXPECT_EQ(folder.sequence_kv(3)->tokens_written, 9);
  EXPECT_EQ(folder.sequence_kv(3)->blocks, 3);
  EXPECT_FALSE(folder.sequence_kv(3)->released);
  folder.fold(std::vector<TelemetryItem>{event(KvEventKind::kFree, 3, {2, 5, 1}, 9, 1),
                                         event(KvEventKind::kPreempt, 4, {0}, 3, 0)},
              0.0);
  // Released: the figures it held last stay readable (the lesson measures after the request).
  ASSERT_TRUE(folder.sequence_kv(3).has_value());
  EXPECT_TRUE(folder.sequence_kv(3)->released);
  EXPECT_EQ(folder.sequence_kv(3)->tokens_written, 9);
  EXPECT_EQ(folder.sequence_kv(3)->blocks, 3);
  EXPECT_EQ(folder.sequence_kv(4)->tokens_written, 3);
  // A preempted sequence starts over when it is recomputed.
  folder.fold(std::vector<TelemetryItem>{event(KvEventKind::kAllocate, 4, {0, 3}, 5, 2),
                                         write(4, 0, 0, 0, 4, 2)},
              0.0);
  EXPECT_FALSE(folder.sequence_kv(4)->released);
  EXPECT_EQ(folder.sequence_kv(4)->blocks, 2);
  EXPECT_EQ(folder.sequence_kv(4)->tokens_written, 4);
  EXPECT_FALSE(folder.sequence_kv(99).has_value());
}

// The reservation comparison's inputs: each sequence holding blocks, its tokens written and the
// longest length its steps reported; a freed one leaves, a recording's (no length) says 0.
TEST(TelemetryFolder, HeldRequestsCarryTheirTokensAndTheLongestLengthTheirStepsReported) {
  TelemetryFolder folder = folder_with_blocks(6);
  StepRecord first = step(0, 9, 0);
  first.batch = {{.sequence = 3, .longest_tokens = 40}, {.sequence = 4, .longest_tokens = 12}};
  folder.fold(std::vector<TelemetryItem>{event(KvEventKind::kAllocate, 3, {5, 1}, 6, 2),
                                         write(3, 5, 0, 0, 6, 2),
                                         event(KvEventKind::kAllocate, 4, {0}, 3, 3),
                                         write(4, 0, 0, 0, 3, 3), first},
              0.0);
  std::vector<serving::HeldRequest> held = folder.held_requests();
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[0].id, 3);
  EXPECT_EQ(held[0].tokens, 6);
  EXPECT_EQ(held[0].longest, 40);
  EXPECT_EQ(held[1].id, 4);
  EXPECT_EQ(held[1].tokens, 3);
  EXPECT_EQ(held[1].longest, 12);
  StepRecord recorded = step(1, 0, 0);  // a recording's entries: no longest length
  recorded.batch = {{.sequence = 7}};
  folder.fold(std::vector<TelemetryItem>{event(KvEventKind::kFree, 3, {5, 1}, 6, 1),
                                         event(KvEventKind::kAllocate, 7, {2}, 2, 2),
                                         write(7, 2, 0, 0, 2, 2), recorded},
              0.0);
  held = folder.held_requests();
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[0].id, 4);
  EXPECT_EQ(held[1].id, 7);
  EXPECT_EQ(held[1].longest, 0);
}

TEST(TelemetryFolder, FlagsEventsThatDisagreeWithTheReplay) {
  TelemetryFolder folder = folder_with_blocks(4);
  // The pool says 2 blocks are used after taking one: a record was lost.
  folder.fold(std::vector<TelemetryItem>{event(KvEventKind::kAllocate, 0, {1}, 3, 2)}, 0.0);
  EXPECT_EQ(folder.counts().inconsistent_kv_events, 1);
}

telemetry::TokenRecord token_record(int64_t request, int64_t step, int64_t output, int32_t id) {
  telemetry::TokenRecord t;
  t.request_id = request;
  t.step_index = step;
  t.output_index = output;
  t.id = id;
  return t;
}

TEST(TelemetryFolder, KeepsTheTokensOfTheNewestRequestThatReportsThem) {
  TelemetryFolder folder = folder_with_blocks(4);
  folder.fold(std::vector<TelemetryItem>{token_record(3, 1, 0, 11), token_record(3, 2, 1, 12)},
              0.0);
  EXPECT_EQ(folder.watched_request(), 3);
  EXPECT_EQ(folder.watched_tokens().size(), 2u);
  telemetry::TokenRecord next = token_record(5, 6, 0, 20);
  next.prob = 0.25;
  folder.fold(std::vector<TelemetryItem>{next}, 0.0);
  EXPECT_EQ(folder.watched_request(), 5);
  ASSERT_EQ(folder.watched_tokens().size(), 1u);
  EXPECT_EQ(folder.watched_tokens()[0].id, 20);
  EXPECT_EQ(folder.counts().tokens, 3);
}

// Samples of the watched request's prompt draw their first tokens in its first step: their
// tokens are counted but not watched; the next generation's request is.
TEST(TelemetryFolder, FurtherSamplesOfTheWatchedPromptAreNotWatched) {
  TelemetryFolder folder = folder_with_blocks(4);
  folder.fold(std::vector<TelemetryItem>{token_record(7, 4, 0, 30), token_record(8, 4, 0, 31),
                                         token_record(9, 4, 0, 32), token_record(7, 5, 1, 33),
                                         token_record(8, 5, 1, 34), token_record(9, 5, 1, 35)},
              0.0);
  EXPECT_EQ(folder.watched_request(), 7);
  ASSERT_EQ(folder.watched_tokens().size(), 2u);
  EXPECT_EQ(folder.watched_tokens()[1].id, 33);
  EXPECT_EQ(folder.counts().tokens, 6);
  folder.fold(std::vector<TelemetryItem>{token_record(12, 9, 0, 40)}, 0.0);
  EXPECT_EQ(folder.watched_request(), 12);
}

TEST(TelemetryFolder, CountsWhatItTookInAndTheHostMapsItToThePanelsItFeeds) {
  TelemetryFolder folder = folder_with_blocks(4);
  FoldRevisions seen = folder.revisions();
  EXPECT_EQ(panels_with_news(folder.revisions(), seen), 0u);
  folder.fold(std::vector<TelemetryItem>{telemetry::RequestRecord{}}, 0.0);
  EXPECT_EQ(panels_with_news(folder.revisions(), seen),
            panel_bit(PanelId::kBatching) | panel_bit(PanelId::kTimeline));
  folder.fold(std::vector<TelemetryItem>{telemetry::RequestArrival{1, 5, 0.0}}, 0.0);
  EXPECT_EQ(panels_with_news(folder.revisions(), seen), panel_bit(PanelId::kTimeline));
  folder.fold(std::vector<TelemetryItem>{event(KvEventKind::kAllocate, 0, {0}, 1, 1)}, 0.0);
  EXPECT_EQ(panels_with_news(folder.revisions(), seen), panel_bit(PanelId::kKvCache));
  folder.fold(std::vector<TelemetryItem>{step(0, 1, 0)}, 0.0);
  const PanelMask after_step = panels_with_news(folder.revisions(), seen);
  for (const PanelId id :
       {PanelId::kPhases, PanelId::kBatching, PanelId::kRoofline, PanelId::kTimeline}) {
    EXPECT_NE(after_step & panel_bit(id), 0u) << panel_key(id);
  }
  EXPECT_EQ(panels_with_news(folder.revisions(), seen), 0u);  // seen: nothing new
  folder.reset({4, kBlockSize, 100});
  EXPECT_EQ(panels_with_news(folder.revisions(), seen), kAllPanelBits);
}

}  // namespace
}  // namespace servescope::gui
