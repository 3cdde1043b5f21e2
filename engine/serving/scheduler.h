// First-come-first-served continuous batching over a KvBlockPool.
//
// One engine step is:
//   StepBatch batch = scheduler.schedule();       // what to run
//   ... the forward pass runs batch.sequences ...  // (part 2: the batched forward)
//   scheduler.complete_step(batch, next_tokens);  // what came out
//
// schedule() builds the batch in three passes under a token budget and a maximum number of
// sequences: (1) every running sequence that is decoding gets its one token, and a KV slot for
// it; when no block is free the newest running sequence is preempted (blocks freed, put back at
// the front of the waiting queue, recomputed later; its cached prefix often survives); (2)
// running sequences still in prefill get the next chunk of their prompt; (3) waiting requests
// are admitted in arrival order while blocks for their whole prompt, batch slots and budget
// remain. Decodes first keeps inter-token latency steady while long prompts prefill in chunks.
//
// Two batching policies (BatchingPolicy): continuous batching, as above, admits waiting requests
// into any step that has room, so a newcomer joins a batch mid-flight. Static batching waits
// until max_batch_size requests are waiting or the oldest has waited batch_wait_ms, admits them
// together (as many as the KV blocks hold) and admits nobody else until every one of them has
// finished: a finished request's slot stays empty. It is the older way of serving and the
// lesson's foil: waiting to fill a batch delays each request's first token (TTFT) and can raise
// throughput. Time comes in from outside (submit's arrival_ms, schedule's now_ms), so the policy
// is tested on a fake clock.
//
// A sequence's context is what the pool holds (context_limit(): the model's context or the
// pool's tokens, the smaller): a prompt longer than that is refused, and a sequence that reaches
// it stops (FinishReason::kContextFull). No deadlock: one sequence never needs more than the
// pool, so the oldest running sequence can always proceed once everything newer has been
// preempted.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/serving/kv_block_pool.h"
#include "engine/serving/request.h"
#include "engine/telemetry/records.h"
#include "engine/telemetry/step_cost.h"

namespace servescope::serving {

enum class BatchingPolicy {
  kContinuous,  // newcomers join the running batch at any step with room
  kStatic,      // collect a batch (full, or the oldest waited batch_wait_ms), run it to the end
};

// "continuous", "static"; parse_batching_policy is its inverse (InputError otherwise).
std::string_view batching_policy_name(BatchingPolicy policy);
BatchingPolicy parse_batching_policy(std::string_view name);

struct SchedulerConfig {
  int64_t max_batch_size = 8;  // sequences running at once (batch slots)
  int64_t token_budget = 256;  // tokens processed per step, prefill and decode together
  int64_t context_length = 0;  // the model's; a sequence stops when it reaches it
  // How the caller names what raises the KV budget, for the error of a prompt the pool cannot
  // hold: "--kv-bytes" on the command line, the window's setting in the window.
  std::string kv_budget_setting = "the KV budget";
  BatchingPolicy policy = BatchingPolicy::kContinuous;
  // Static batching: the longest the oldest waiting request waits for the batch to fill.
  double batch_wait_ms = 0.0;
  // false: no KV cache, the lesson's foil. Nothing a step computes is kept: after each new
  // token a sequence's blocks are freed and its whole context (prompt and output so far) is
  // prefilled again (SequencePhase::kRecompute) to produce the next one. No prefix is cached.
  bool keep_kv = true;
};

// InputError unless max_batch_size >= 1, token_budget >= max_batch_size (every running
// sequence can decode in every step), context_length >= 1 and batch_wait_ms >= 0 (finite).
void validate(const SchedulerConfig& config);

// One sequence's work in a step, ready for a batched forward pass: process `tokens` at
// positions start, start + 1, ..., writing their KV into the slots `block_table` gives those
// positions and attending to positions 0 .. start + count - 1 through the same table.
struct ScheduledSequence {
  SequenceId sequence = 0;
  int64_t slot = 0;  // the sequence's batch slot, in [0, max_batch_size)
  telemetry::SequencePhase phase = telemetry::SequencePhase::kPrefill;
  int64_t start = 0;                 // position of the first token (= tokens already cached)
  int64_t count = 0;                 // tokens to process
  bool is_prefill = false;           // prompt (or recompute) chunk; false: one decode token
  bool samples_next_token = false;   // reaches the last known token: sample from its logits
  std::vector<int32_t> tokens;       // the count token ids
  std::vector<BlockId> block_table;  // covers at least start + count positions
  int64_t longest = 0;  // prompt + max_tokens, capped at the model's context: its most tokens
  // Samples of the same prompt that take their first token from this step's logits too (set
  // on the step that ends a prompt submitted with submit_samples); complete_step gets their
  // tokens in order.
  std::vector<SequenceId> forks;
};

struct StepBatch {
  int64_t step_index = 0;
  std::vector<ScheduledSequence> sequences;  // decodes first, then prefill chunks
  std::vector<SequenceId> admitted;          // first admitted or resumed in this step
  std::vector<SequenceId> preempted;         // lost their blocks in this step
  int64_t prefill_tokens = 0;
  int64_t decode_tokens = 0;

  bool empty() const { return sequences.empty(); }
  int64_t tokens() const { return prefill_tokens + decode_tokens; }
};

// The counts of a scheduled step for its telemetry record: tokens, sequences, batch slots and
// KV blocks while the step runs. Timings, bytes and FLOPs are the engine's to add.
telemetry::StepRecord step_record_counts(const StepBatch& batch, const SchedulerConfig& config,
                                         const KvBlockPool& pool);
// The batch's composition, as telemetry::estimate_step_cost takes it.
std::vector<telemetry::SequenceWork> step_work(const StepBatch& batch);

class Scheduler {
 public:
  // The pool must outlive the scheduler, and only this scheduler allocates from it.
  Scheduler(const SchedulerConfig& config, KvBlockPool& pool);

  // Queues a request and returns its id. InputError for an empty prompt, max_tokens < 1 or a
  // prompt longer than the context limit (the error says whether the model's context or the KV
  // budget limits it, and names config().kv_budget_setting for the latter).
  // arrival_ms (on the caller's clock, the one schedule() gets) starts a static batch's wait.
  SequenceId submit(const Request& request, double arrival_ms = 0.0);
  // `n` samples of one prompt: ids first .. first + n - 1. The first is queued as submit()
  // queues a request; the others wait for it to compute the prompt, then each takes its first
  // token from the same logits (see ScheduledSequence::forks) and shares the prompt's blocks
  // (KvBlockPool::fork), joining the running batch if a batch slot is free, else the front of
  // the queue (to compute its context again). InputError as submit(), for n < 1, and for n > 1
  // without a KV cache (keep_kv false: there is nothing to share).
  std::vector<SequenceId> submit_samples(const Request& request, int64_t n, double arrival_ms = 0.0);

  // The next step's batch (possibly empty). complete_step() must report it before the next call.
  // now_ms: the caller's clock, read by the static policy only. Empty while a static batch is
  // still collecting (see batch_due_ms).
  StepBatch schedule(double now_ms = 0.0);

  // Static policy, nothing running and requests waiting: when the waiting batch will be
  // released at the latest (oldest arrival + batch_wait_ms; it goes earlier when it fills).
  // nullopt otherwise (continuous policy, a batch running, or nobody waiting).
  std::optional<double> batch_due_ms() const;
  // Static policy: requests wait, nothing runs, and the batch is neither full nor due at
  // now_ms; schedule() would return an empty batch.
  bool collecting_batch(double now_ms) const;

  // Changes the policy for the batches that start from now on (a running static batch still
  // runs to its end). InputError for a negative or non-finite wait.
  void set_batching(BatchingPolicy policy, double batch_wait_ms);

  // Reports a step's results: next_tokens[i] is the token sampled for batch.sequences[i] and is
  // read only where samples_next_token is set; fork_tokens holds the first token of each of the
  // batch's forks, in batch order. Sequences that stop leave at once, freeing their blocks.
  void complete_step(const StepBatch& batch, std::span<const int32_t> next_tokens,
                     std::span<const int32_t> fork_tokens = {});

  // Ends a waiting or running sequence now (e.g. the user cancelled); its blocks are freed.
  // Returns false, doing nothing, for a sequence already finished (or taken).
  bool finish(SequenceId sequence, FinishReason reason = FinishReason::kCancelled);

  bool has_unfinished() const { return !waiting_.empty() || !running_.empty(); }
  // Waiting, running, or finished and not yet taken; std::out_of_range otherwise.
  const Sequence& sequence(SequenceId id) const;
  bool knows(SequenceId id) const { return sequences_.contains(id); }
  const std::deque<SequenceId>& waiting() const { return waiting_; }
  const std::vector<SequenceId>& running() const { return running_; }  // oldest admitted first
  // The sequences finished since the last call, in finishing order, handed over: the scheduler
  // forgets them (so its memory stays bounded by what is waiting and running).
  std::vector<Sequence> take_finished();
  // Sequences the scheduler holds: waiting, running and finished-not-taken.
  size_t tracked_sequences() const { return sequences_.size(); }
  // Sequences submitted so far: ids 0 .. submitted() - 1 have been given out.
  SequenceId submitted() const { return next_id_; }
  // The index the next schedule() gives its batch.
  int64_t next_step_index() const { return next_step_; }
  const SchedulerConfig& config() const { return config_; }
  const KvBlockPool& pool() const { return pool_; }
  // The longest a sequence may grow: the model's context, or the tokens the KV pool holds when
  // its budget is smaller.
  int64_t context_limit() const;

 private:
  bool reserve_decode_slot(size_t running_index, StepBatch& batch);
  void preempt_newest(StepBatch& batch);
  // keep_kv false: frees a sequence's blocks after its new token and sets it to prefill its
  // whole context again (queued at the front when the pool cannot hold it now).
  void forget_context(Sequence& s);
  void admit_waiting(int64_t& budget, StepBatch& batch);
  void admit_static_batch(StepBatch& batch);
  void admit(Sequence& s, StepBatch& batch);
  void add_to_batch(Sequence& s, int64_t count, StepBatch& batch);
  // A waiting sample takes its first token and the prompt's blocks from `parent`, or, with no
  // batch slot free, queues at `queue_position`. Returns whether it queued.
  bool fork_sample(Sequence& parent, SequenceId child, int32_t token, int64_t step_index,
                   size_t queue_position);
  // After a sequence's new token: it leaves if it is done, or forgets its context without a KV
  // cache.
  void after_new_token(Sequence& s);
  int64_t take_batch_slot();
  void release_batch_slot(Sequence& s);
  FinishReason finish_reason_now(const Sequence& s) const;  // kNone: it goes on
  void retire(Sequence& s, FinishReason reason);
  Sequence& get(SequenceId id);

  SchedulerConfig config_;
  KvBlockPool& pool_;
  std::map<SequenceId, Sequence> sequences_;
  std::deque<SequenceId> waiting_;
  std::vector<SequenceId> running_;
  std::vector<SequenceId> finished_;
  std::vector<bool> slot_taken_;  // by batch slot
  SequenceId next_id_ = 0;
  int64_t next_step_ = 0;
  bool step_in_flight_ = false;  // schedule() returned a batch complete_step() has not seen
};

}  // namespace servescope::serving
