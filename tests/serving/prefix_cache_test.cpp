// Prefix reuse: hash-chained full blocks, shared blocks with reference counts, LRU eviction of
// free cached blocks, and "live typing": each new request prefills only what is not cached.
#include "engine/serving/prefix_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "engine/serving/kv_block_pool.h"
#include "engine/serving/scheduler.h"
#include "scheduler_test_support.h"

namespace servescope::serving {
namespace {

using serving::testing::FakeForward;
using serving::testing::reference_output;
using serving::testing::run_step;
using telemetry::KvEvent;
using telemetry::KvEventKind;

constexpr int64_t kBlock = 4;

std::vector<int32_t> iota_tokens(int64_t n, int32_t first = 0) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

TEST(PrefixCache, MatchesOnlyTheSameTokensAfterTheSameParent) {
  PrefixCache cache;
  const std::vector<int32_t> block = {5, 6, 7, 8};
  const auto first = cache.insert(kRootBlockHash, block, 3);
  EXPECT_TRUE(first.indexed);
  ASSERT_TRUE(cache.find(kRootBlockHash, block).has_value());
  EXPECT_EQ(cache.find(kRootBlockHash, block)->block, 3);
  EXPECT_FALSE(cache.find(first.hash, block).has_value());  // same tokens, one block later
  EXPECT_FALSE(cache.find(kRootBlockHash, std::vector<int32_t>{5, 6, 7, 9}).has_value());
  EXPECT_FALSE(cache.insert(kRootBlockHash, block, 4).indexed);  // first holder stays
  EXPECT_EQ(cache.find(kRootBlockHash, block)->block, 3);
  cache.erase(first.hash);
  EXPECT_FALSE(cache.find(kRootBlockHash, block).has_value());
}

TEST(PrefixCache, ChainedHashDependsOnEveryEarlierToken) {
  const std::vector<int32_t> a = {1, 2, 3, 4}, b = {1, 2, 3, 5}, c = {9, 9, 9, 9};
  EXPECT_NE(chain_block_hash(chain_block_hash(kRootBlockHash, a), c),
            chain_block_hash(chain_block_hash(kRootBlockHash, b), c));
}

class PrefixPoolTest : public ::testing::Test {
 protected:
  KvBlockPool pool{KvLayout{2, 32, gguf::GgmlType::F16, kBlock}, 8};

  // Allocates and marks every token computed, as a finished prefill would.
  int64_t allocate_computed(SequenceId id, const std::vector<int32_t>& tokens) {
    const int64_t cached = pool.allocate(id, tokens);
    pool.cache_computed_blocks(id, tokens);
    return cached;
  }

  // Records every event from here on into `events`; then two prompts of two full blocks each
  // are cached and freed: 4 cached free blocks, 4 never used.
  void cache_two_prompts_and_free(std::vector<KvEvent>& events) {
    pool.set_event_sink([&events](const KvEvent& e) { events.push_back(e); });
    allocate_computed(1, iota_tokens(8, 0));
    allocate_computed(2, iota_tokens(8, 100));
    pool.free(1);
    pool.free(2);
  }
};

TEST_F(PrefixPoolTest, SharedBlocksAreCountedAndOutliveTheirFirstOwner) {
  const auto tokens = iota_tokens(10);  // blocks [0..3] [4..7] [8 9]
  EXPECT_EQ(allocate_computed(1, tokens), 0);
  EXPECT_EQ(pool.blocks_used(), 3);
  EXPECT_EQ(allocate_computed(2, tokens), 8);  // two full blocks shared, last one recomputed
  EXPECT_EQ(pool.blocks_used(), 4);
  const auto t1 = pool.block_table(1);
  const auto t2 = pool.block_table(2);
  EXPECT_EQ(t1[0], t2[0]);
  EXPECT_EQ(t1[1], t2[1]);
  EXPECT_NE(t1[2], t2[2]);
  EXPECT_EQ(pool.ref_count(t1[0]), 2);
  EXPECT_EQ(pool.usage().sequences[1].shared_blocks, 2);

  const BlockId shared = t1[0];
  pool.free(1);
  EXPECT_EQ(pool.ref_count(shared), 1);  // still sequence 2's
  EXPECT_EQ(pool.blocks_used(), 3);
  pool.free(2);
  EXPECT_EQ(pool.blocks_used(), 0);
  EXPECT_EQ(pool.usage().blocks_free_cached, 2);  // both full blocks stay findable
  EXPECT_EQ(pool.usage().prefix_hit_tokens, 8);
  EXPECT_EQ(pool.usage().prefix_lookup_tokens, 20);
}

TEST_F(PrefixPoolTest, ABlockAlignedPromptRecomputesItsLastBlock) {
  const auto tokens = iota_tokens(8);
  allocate_computed(1, tokens);
  pool.free(1);
  // All 8 tokens are cached, but the last one must run to give logits: its block is fresh.
  EXPECT_EQ(pool.allocate(2, tokens), 4);
}

TEST_F(PrefixPoolTest, FreeCachedBlocksAreReusedLastAndEvictedLeastRecentlyFreedFirst) {
  std::vector<KvEvent> events;
  cache_two_prompts_and_free(events);
  EXPECT_EQ(pool.usage().blocks_free_cached, 4);
  // Four never-used blocks go first: nothing is evicted.
  pool.allocate(3, iota_tokens(16, 200));
  EXPECT_EQ(pool.usage().blocks_free_cached, 4);
  // The next block evicts sequence 1's tail block (freed first, tail before head).
  events.clear();
  pool.append(3);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, KvEventKind::kEvict);
  EXPECT_EQ(events[1].kind, KvEventKind::kAppend);
  EXPECT_EQ(pool.usage().blocks_free_cached, 3);
  // Sequence 1's head block survives, its second block is gone. (Sequence 3's blocks, never
  // computed, go to the front of the free list and are taken before any cached block.)
  pool.free(3);
  EXPECT_EQ(pool.allocate(4, iota_tokens(9, 0)), 4);
  EXPECT_EQ(pool.allocate(5, iota_tokens(9, 100)), 8);
}

// Each event's occupancy is the one the events so far give, also when taking blocks evicts
// cached prefixes on the way (the eviction was reported counting blocks taken but not yet
// announced) and when a prompt shares cached blocks and takes fresh ones.
TEST_F(PrefixPoolTest, EveryEventsOccupancyIsTheReplayedOne) {
  std::vector<KvEvent> events;
  cache_two_prompts_and_free(events);
  pool.allocate(3, iota_tokens(12, 200));  // 3 of the 4 never-used blocks
  pool.allocate(4, iota_tokens(13, 100));  // shares 2's blocks, takes the last never-used
                                           // block and one cached block (an eviction)
  pool.append(3);                          // takes and evicts another cached block
  std::vector<int32_t> ref_counts(8, 0);
  int64_t used = 0;
  for (const KvEvent& e : events) {
    for (const int32_t b : e.blocks) {
      int32_t& refs = ref_counts[static_cast<size_t>(b)];
      switch (e.kind) {
        case KvEventKind::kAllocate:
        case KvEventKind::kAppend:
        case KvEventKind::kPrefixHit:
          if (refs++ == 0) ++used;
          break;
        case KvEventKind::kFree:
        case KvEventKind::kPreempt:
          if (--refs == 0) --used;
          break;
        default:
          break;
      }
    }
    EXPECT_EQ(e.blocks_used_after, used) << telemetry::kv_event_kind_name(e.kind);
  }
  EXPECT_EQ(used, pool.blocks_used());
  EXPECT_EQ(std::ranges::count_if(events, [](const KvEvent& e) {
              return e.kind == KvEventKind::kEvict;
            }),
            2);
}

TEST_F(PrefixPoolTest, EvictCachedBlocksForgetsEveryFreePrefix) {
  allocate_computed(1, iota_tokens(9));
  allocate_computed(2, iota_tokens(9, 50));
  pool.free(1);
  EXPECT_EQ(pool.evict_cached_blocks(), 2);  // sequence 2's blocks are in use: kept
  EXPECT_EQ(pool.allocate(3, iota_tokens(9)), 0);
  EXPECT_EQ(pool.allocate(4, iota_tokens(9, 50)), 8);
}

TEST_F(PrefixPoolTest, CanAllocateCountsFreeBlocksTakenByAHit) {
  allocate_computed(1, iota_tokens(8));
  pool.free(1);
  // 8 blocks free, 2 of them holding the prefix. A 29-token prompt needs 8 blocks, 2 of them
  // hits: a hit on a free block takes it from the free list too, so all 8 come from there.
  EXPECT_EQ(pool.blocks_needed(iota_tokens(29)), 8);
  EXPECT_TRUE(pool.can_allocate(iota_tokens(29)));
  pool.allocate(2, iota_tokens(29));
  EXPECT_EQ(pool.blocks_free(), 0);
}

// Live typing through the scheduler: the user's text grows (and is sometimes edited in the
// middle); every keystroke submits the whole text. Each request must prefill exactly the tokens
// not covered by full blocks that an earlier request computed.
TEST(PrefixReuse, TypingPrefillsOnlyTheUncachedTokens) {
  // Enough blocks that nothing is evicted: the reference cache below never forgets.
  KvBlockPool pool(KvLayout{2, 32, gguf::GgmlType::F16, kBlock}, 512);
  Scheduler scheduler(SchedulerConfig{4, 256, 200}, pool);
  FakeForward forward(pool);
  std::set<std::vector<int32_t>> computed_full_prefixes;  // the reference cache
  std::mt19937 rng(7);
  std::vector<int32_t> text = {1};

  for (int keystroke = 0; keystroke < 60; ++keystroke) {
    if (keystroke % 10 == 9 && text.size() > 6) {
      text[rng() % (text.size() - 1)] = 50;  // an edit in the middle
    } else {
      const int typed = 1 + static_cast<int>(rng() % 3);
      for (int i = 0; i < typed; ++i) text.push_back(static_cast<int32_t>(rng() % 40));
    }
    // Expected hit: the longest run of full blocks (all but the last token) already computed.
    int64_t expected_cached = 0;
    for (size_t end = kBlock; end <= text.size() - 1; end += kBlock) {
      if (!computed_full_prefixes.contains({text.begin(), text.begin() + end})) break;
      expected_cached = static_cast<int64_t>(end);
    }

    const SequenceId id = scheduler.submit(Request{text, 1, -1});
    const StepBatch batch = run_step(scheduler, forward);
    ASSERT_EQ(batch.sequences.size(), 1u);
    EXPECT_EQ(batch.sequences[0].start, expected_cached) << "keystroke " << keystroke;
    EXPECT_EQ(batch.prefill_tokens, static_cast<int64_t>(text.size()) - expected_cached);
    EXPECT_EQ(scheduler.sequence(id).cached_prompt_tokens, expected_cached);
    EXPECT_EQ(scheduler.sequence(id).output_ids(), reference_output(Request{text, 1, -1}, 200));
    EXPECT_EQ(pool.blocks_used(), 0);

    for (size_t end = kBlock; end <= text.size(); end += kBlock) {
      computed_full_prefixes.insert({text.begin(), text.begin() + end});
    }
  }
}

TEST(PrefixReuse, AnEditReusesOnlyBlocksBeforeTheFirstChange) {
  KvBlockPool pool(KvLayout{2, 32, gguf::GgmlType::F16, kBlock}, 16);
  Scheduler scheduler(SchedulerConfig{4, 64, 200}, pool);
  FakeForward forward(pool);
  std::vector<int32_t> text = iota_tokens(21);  // 5 full blocks + 1 token
  scheduler.submit(Request{text, 1, -1});
  run_step(scheduler, forward);

  text[9] = 99;  // inside the third block (positions 8..11)
  const SequenceId edited = scheduler.submit(Request{text, 1, -1});
  const StepBatch batch = run_step(scheduler, forward);
  EXPECT_EQ(batch.sequences[0].start, 8);
  EXPECT_EQ(batch.prefill_tokens, 13);
  EXPECT_EQ(scheduler.sequence(edited).output_ids(), reference_output(Request{text, 1, -1}, 200));
}

}  // namespace
}  // namespace servescope::serving
