// Test doubles for the scheduler: a stand-in forward pass that really goes through the block
// tables, and the reference output of a request run alone.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

#include "engine/serving/scheduler.h"

namespace servescope::serving::testing {

constexpr int32_t kFakeVocab = 61;

// n consecutive token ids from `first`.
inline std::vector<int32_t> iota_tokens(int64_t n, int32_t first = 0) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

// The fake model's next token: a function of the whole context, so a token read from a wrong
// or overwritten slot changes the output.
inline int32_t next_token_after(std::span<const int32_t> context) {
  uint64_t h = 1469598103934665603ull;
  for (const int32_t t : context) h = (h ^ static_cast<uint32_t>(t)) * 1099511628211ull;
  return static_cast<int32_t>(h % kFakeVocab);
}

// What the request produces when it runs alone: the reference for batched, preempted and
// prefix-sharing runs.
inline std::vector<int32_t> reference_output(const Request& r, int64_t context_length) {
  std::vector<int32_t> tokens = r.prompt_ids;
  std::vector<int32_t> out;
  while (true) {
    out.push_back(next_token_after(tokens));
    tokens.push_back(out.back());
    if (out.back() == r.stop_token || static_cast<int64_t>(out.size()) >= r.max_tokens ||
        static_cast<int64_t>(tokens.size()) >= context_length) {
      return out;
    }
  }
}

// The first token of sample `fork` of a prompt whose model token is `token`: shifted by the
// sample's id, so that every sample of a prompt goes its own way.
inline int32_t fork_token(int32_t token, SequenceId fork) {
  return static_cast<int32_t>((token + 1 + fork) % kFakeVocab);
}

// What sample `fork` of `r` produces: its own first token, then the fake model's tokens.
inline std::vector<int32_t> reference_sample_output(const Request& r, SequenceId fork,
                                                    int64_t context_length) {
  std::vector<int32_t> out{fork_token(next_token_after(r.prompt_ids), fork)};
  if (r.max_tokens == 1 || out.back() == r.stop_token) return out;
  Request rest = r;
  rest.prompt_ids.push_back(out.back());
  rest.max_tokens = r.max_tokens - 1;
  const std::vector<int32_t> tail = reference_output(rest, context_length);
  out.insert(out.end(), tail.begin(), tail.end());
  return out;
}

// Plays the batched forward pass: makes the pool's copy-on-write block copies, writes every
// processed token's id into the KV slot its block table gives (the "KV"), then, for sequences
// that sample, reads the whole context back through the table and derives the next token from
// what it read (and each fork's first token from the same context, see fork_token).
class FakeForward {
 public:
  explicit FakeForward(KvBlockPool& pool)
      : pool_(pool),
        block_size_(pool.layout().block_size),
        slots_(static_cast<size_t>(pool.blocks_total() * block_size_), -1) {}

  std::vector<int32_t> run(const StepBatch& batch) {
    for (const BlockCopy& copy : pool_.take_block_copies()) {
      for (int64_t k = 0; k < copy.slots; ++k) {
        slots_[static_cast<size_t>(copy.to * block_size_ + k)] =
            slots_[static_cast<size_t>(copy.from * block_size_ + k)];
      }
    }
    for (const ScheduledSequence& e : batch.sequences) write(e);
    std::vector<int32_t> next;
    fork_tokens_.clear();
    for (const ScheduledSequence& e : batch.sequences) {
      next.push_back(e.samples_next_token ? next_token_after(read_context(e)) : -1);
      for (const SequenceId fork : e.forks) fork_tokens_.push_back(fork_token(next.back(), fork));
    }
    return next;
  }
  // The first tokens of the last run's forks, in batch order.
  const std::vector<int32_t>& fork_tokens() const { return fork_tokens_; }

  // Token ids the slots of positions [0, n) hold for a block table.
  std::vector<int32_t> read(std::span<const BlockId> table, int64_t n) const {
    std::vector<int32_t> context;
    for (int64_t p = 0; p < n; ++p) context.push_back(slots_[slot(table, p)]);
    return context;
  }

 private:
  size_t slot(std::span<const BlockId> table, int64_t position) const {
    const BlockId block = table[static_cast<size_t>(position / block_size_)];
    return static_cast<size_t>(block * block_size_ + position % block_size_);
  }

  void write(const ScheduledSequence& e) {
    EXPECT_GE(static_cast<int64_t>(e.block_table.size()) * block_size_, e.start + e.count);
    for (int64_t k = 0; k < e.count; ++k) {
      const int64_t position = e.start + k;
      const BlockId block = e.block_table[static_cast<size_t>(position / block_size_)];
      // Writing into a block another live sequence also reads would corrupt it.
      EXPECT_EQ(pool_.ref_count(block), 1) << "sequence " << e.sequence << " writes position "
                                           << position << " into shared block " << block;
      slots_[slot(e.block_table, position)] = e.tokens[static_cast<size_t>(k)];
    }
  }

  std::vector<int32_t> read_context(const ScheduledSequence& e) const {
    return read(e.block_table, e.start + e.count);
  }

  KvBlockPool& pool_;
  int64_t block_size_;
  std::vector<int32_t> slots_;
  std::vector<int32_t> fork_tokens_;
};

// schedule -> fake forward -> complete_step; returns the batch that ran.
inline StepBatch run_step(Scheduler& scheduler, FakeForward& forward) {
  StepBatch batch = scheduler.schedule();
  if (batch.empty()) return batch;
  const std::vector<int32_t> next = forward.run(batch);
  scheduler.complete_step(batch, next, forward.fork_tokens());
  return batch;
}

}  // namespace servescope::serving::testing
