// The serving engine: many requests through one model at once. It ties the pieces together
// and adds nothing clever of its own:
//
//   submit()  queues a request with the Scheduler and gives it its own seeded Sampler, so its
//             tokens do not depend on what else shares its batches;
//   step()    schedule -> one ragged forward_batch over the paged KV cache (slots from the
//             block tables) -> sample the sequences that reached their last known token ->
//             complete_step -> telemetry (a StepRecord, a RequestRecord per finished request,
//             the pool's KV events, TokenRecords where asked) to the observer.
//   cancel()  ends a request at the step boundary: its blocks are freed at once between steps.
//   submit_samples()  n samples of one prompt: computed once, its blocks shared (copy-on-write).
//
// The KV cache holds exactly the pool's blocks: block b, offset o is slot b * block_size + o.
// Blocks a new sequence shares through the prefix cache already hold their keys and values, so
// a step only computes a sequence's tokens from its scheduled `start`.
//
// Threading: an Engine is not thread-safe. One thread owns it and calls every method (submit,
// step, cancel, the queries); in the desktop application that is the engine worker thread, to
// which the GUI sends its commands as queued signals. The observer is called on that thread,
// synchronously, inside step() and cancel(); it must not block: hand records to
// other threads through a telemetry::TelemetryQueue. An observer may call cancel() (it takes
// effect when the step ends) but not step() or submit().
//
// Memory stays bounded by what is waiting and running: a finished request leaves the
// scheduler, its results go out in its RequestRecord (output ids, finish reason), and the
// engine keeps only the last `finished_history` finished sequences for sequence()/output_ids().
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/model/transformer.h"
#include "engine/serving/kv_block_pool.h"
#include "engine/serving/sampler.h"
#include "engine/serving/scheduler.h"
#include "engine/telemetry/observer.h"
#include "engine/telemetry/serving_clock.h"

namespace servescope::serving {

struct EngineConfig {
  int64_t max_batch_size = 8;
  int64_t token_budget = 256;  // tokens per step; raised to max_batch_size when below it
  gguf::GgmlType kv_type = gguf::GgmlType::F16;
  int64_t block_size = 16;
  // KV capacity in blocks; 0: as many as kv_bytes buys (kv_budget.h), never more than
  // max_batch_size sequences of the full context need.
  int64_t kv_blocks = 0;
  // The KV cache's memory budget when kv_blocks is 0; 0: default_kv_budget_bytes(). A request's
  // context is what the pool holds (Scheduler::context_limit), never the declared maximum.
  uint64_t kv_bytes = 0;
  // How the caller names what raises the budget, in the error of a prompt that does not fit.
  std::string kv_budget_setting = "the KV budget";
  // Finished requests whose Sequence stays available to sequence() and output_ids(), newest
  // kept; older ones are forgotten (their RequestRecord carried the results).
  int64_t finished_history = 256;
  // How requests join batches (scheduler.h): continuous (join any step with room) or static
  // (collect up to max_batch_size, waiting at most batch_wait_ms for the oldest, then run that
  // batch to its end with no newcomers). set_batching() changes it between runs.
  BatchingPolicy batching = BatchingPolicy::kContinuous;
  double batch_wait_ms = 0.0;
  // Per-operation spans of each forward pass on StepRecord::spans (one per operation on the CPU
  // backend, one per dispatch on Vulkan, from timestamp queries; a backend that cannot time
  // them leaves spans_measured false and says why in spans_note). Off: nothing is recorded.
  bool kernel_spans = false;
  // Whether the caller warmed the transformer's kernels for this configuration (warm_up.h).
  // When false, the engine's first step is marked cold (StepRecord::cold): it pays one-off
  // costs (pipeline compilation, first touch of buffers) and is no measure of its phase.
  bool warmed_up = false;
  // false: serve without a KV cache (SchedulerConfig::keep_kv): every new token recomputes
  // its whole context. The lesson's measured foil for what the cache saves.
  bool keep_kv = true;
};

// A request as the engine takes it: the scheduler's Request (the tokens and when to stop) and
// what only the engine knows about, how to sample and what to report. One request, one type
// for each layer: the scheduler never samples.
struct EngineRequest : Request {
  SamplingParams sampling;
  // Token probabilities: unset (the default) computes nothing; K >= 0 reports a TokenRecord
  // per generated token with its probability, its sampling probability and the K most likely
  // alternatives (0: none).
  std::optional<int64_t> top_k_alternatives;
};

class Engine {
 public:
  // weight_bytes: the model's weight tensor bytes (model::summarize_weights), for the step
  // cost estimate. The transformer and the observer (may be null) must outlive the engine.
  // InputError for a bad configuration (block size, KV type, capacity, batch size).
  Engine(model::Transformer& transformer, uint64_t weight_bytes, const EngineConfig& config,
         telemetry::Observer* observer = nullptr);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request; it joins the running batch at a later step. arrival_ms (on now_ms()'s
  // clock) defaults to now; a load generator passes the time the request was due. InputError
  // for bad sampling options, a token id outside the vocabulary, an empty prompt,
  // max_tokens < 1, or a prompt longer than the model's context or than the KV pool holds
  // (scheduler().context_limit()); a refused request leaves the engine as it was.
  SequenceId submit(const EngineRequest& request, std::optional<double> arrival_ms = {});
  // `n` samples of one prompt (Scheduler::submit_samples): the prompt is computed once, each
  // sample draws its first token from the same logits and shares the prompt's KV blocks until
  // it writes into a shared one (copy-on-write). Sample i samples with seed sampling.seed + i,
  // so it gives the tokens a request of its own with that seed gives. Returns the n ids.
  // InputError as submit(), for n < 1, and for n > 1 without a KV cache.
  std::vector<SequenceId> submit_samples(const EngineRequest& request, int64_t n,
                                         std::optional<double> arrival_ms = {});

  // Runs one step. Returns false, doing nothing, when no request is waiting or running, or
  // when the static policy is still collecting its batch (waiting_for_batch()). Requests are
  // checked at submit(), so a step throws only when the backend fails; the engine cannot
  // continue after that.
  bool step();
  // Steps until nothing is waiting or running, sleeping while a static batch collects.
  void run_until_idle();

  // Static policy: requests wait for their batch to fill or fall due; batch_due_ms() says when
  // (now_ms() clock) at the latest. The caller sleeps until then or the next arrival.
  bool waiting_for_batch() const { return scheduler_.collecting_batch(now_ms()); }
  std::optional<double> batch_due_ms() const { return scheduler_.batch_due_ms(); }
  // The batching policy from the next batch on (between runs in the desktop application).
  // InputError for a negative or non-finite wait.
  void set_batching(BatchingPolicy policy, double batch_wait_ms) {
    scheduler_.set_batching(policy, batch_wait_ms);
  }

  // Ends a waiting or running request with FinishReason::kCancelled: its blocks are freed
  // (kFree events) and its RequestRecord reported at once when called between steps, at the
  // end of the step when called from the observer during one. Returns false, doing nothing,
  // for a request that already finished (or an unknown id).
  bool cancel(SequenceId id);

  // Forgets every cached prompt prefix that free blocks hold (kEvict events), so the next
  // prefill of a repeated prompt computes all of it; blocks in use keep theirs. Returns how many
  // blocks were dropped.
  int64_t forget_cached_prefixes() { return pool_.evict_cached_blocks(); }

  bool has_unfinished() const { return scheduler_.has_unfinished(); }
  // A waiting, running or recently finished request (see EngineConfig::finished_history);
  // std::out_of_range for one never submitted or forgotten.
  const Sequence& sequence(SequenceId id) const;
  std::vector<int32_t> output_ids(SequenceId id) const { return sequence(id).output_ids(); }
  // true once finished (forgotten ones included); std::out_of_range for an id never given out.
  bool is_finished(SequenceId id) const;

  // The whole KV block table state, for a consumer of the KV events to resynchronise from.
  telemetry::KvSnapshot kv_snapshot() const;

  const Scheduler& scheduler() const { return scheduler_; }
  const KvBlockPool& pool() const { return pool_; }
  KvUsage kv_usage() const { return pool_.usage(); }
  const model::PagedKvCache& kv_cache() const { return cache_; }
  int64_t steps_run() const { return steps_run_; }

  // Milliseconds of serving time since the engine was created: the clock of every record. It
  // is the steady clock less the pauses held with hold_clock() (telemetry::ServingClock).
  double now_ms() const { return clock_.now_ms(); }
  // Holds the clock after a step, until the next step() (or resume_clock()): the caller's
  // deliberate wait between steps (slow motion, single step) is not serving time, so it
  // stretches no record's TTFT or TPOT. step() resumes it first, so a static batch's wait for
  // its requests, which is serving time, runs on a running clock.
  void hold_clock() { clock_.hold(); }
  void resume_clock() { clock_.resume(); }
  // Steady time held so far.
  double paused_ms() const { return clock_.paused_ms(); }

 private:
  // What the engine remembers of a request until it finishes.
  struct RequestState {
    Sampler sampler;
    telemetry::RequestRecord record;
    std::optional<int64_t> top_k_alternatives;
  };

  std::vector<model::SequenceStep> sequence_steps(const StepBatch& batch,
                                                  std::vector<std::vector<int32_t>>& slots) const;
  // The next token of each sequence that samples (-1 for the others), and in fork_tokens the
  // first token of each fork, in batch order.
  std::vector<int32_t> sample(const StepBatch& batch, const std::vector<float>& logits,
                              std::vector<int32_t>& fork_tokens,
                              std::vector<telemetry::TokenRecord>& tokens);
  int32_t draw(SequenceId id, std::span<const float> row_logits, int64_t step_index,
               int64_t position, std::vector<telemetry::TokenRecord>& tokens);
  // Copy-on-write: the KV slots the pool's block copies promise, before the forward pass.
  void copy_shared_blocks();
  void report_step(const StepBatch& batch, std::span<const int32_t> next_tokens,
                   std::span<const Sequence> finished, telemetry::StepRecord& record);
  void report_finished(std::vector<Sequence> finished);
  void forward_kv_event(const telemetry::KvEvent& event);
  std::vector<float> forward(std::span<const model::SequenceStep> steps,
                             telemetry::StepRecord& record);
  void apply_cancels();

  model::Transformer& transformer_;
  uint64_t weight_bytes_;
  int64_t finished_history_;
  bool kernel_spans_;
  bool warmed_up_;
  telemetry::Observer* observer_;
  KvBlockPool pool_;
  Scheduler scheduler_;
  model::PagedKvCache cache_;
  std::map<SequenceId, RequestState> requests_;  // unfinished requests
  std::map<SequenceId, Sequence> finished_;      // the last finished_history_ finished ones
  std::deque<SequenceId> finished_order_;        // oldest first
  std::vector<SequenceId> pending_cancels_;      // cancel() from the observer during a step
  bool in_step_ = false;
  int64_t event_step_index_ = 0;  // what KV events are stamped with
  std::optional<double> event_time_ms_;  // their time, when not now_ms()
  int64_t last_step_index_ = -1;
  telemetry::ServingClock clock_;
  int64_t steps_run_ = 0;
};

// The scheduler configuration an engine configuration gives for a model.
SchedulerConfig scheduler_config(const EngineConfig& config, const model::ModelConfig& model);
// The KV blocks an engine configuration gives for a model: kv_blocks, or what kv_bytes (or the
// default budget) buys, at most max_batch_size full contexts. InputError for a negative count,
// a block size below 1 or a budget smaller than one block.
int64_t kv_block_count(const EngineConfig& config, const model::ModelConfig& model);

}  // namespace servescope::serving
