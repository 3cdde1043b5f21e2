// The serving engine: many requests through one model at once. It ties the pieces together
// and adds nothing clever of its own:
//
//   submit()  queues a request with the Scheduler and gives it its own seeded Sampler, so its
//             tokens do not depend on what else shares its batches;
//   step()    schedule -> one ragged forward_batch over the paged KV cache (slots from the
//             block tables) -> sample the sequences that reached their last known token ->
//             complete_step -> telemetry (a StepRecord, a RequestRecord per finished request,
//             the pool's KV events) to the observer.
//
// The KV cache holds exactly the pool's blocks: block b, offset o is slot b * block_size + o.
// Blocks a new sequence shares through the prefix cache already hold their keys and values, so
// a step only computes a sequence's tokens from its scheduled `start`.
//
// The observer is called on the engine's thread, synchronously; it must not block (use a
// telemetry::TelemetryQueue to hand records to another thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "engine/model/transformer.h"
#include "engine/serving/kv_block_pool.h"
#include "engine/serving/sampler.h"
#include "engine/serving/scheduler.h"
#include "engine/telemetry/observer.h"

namespace servescope::serving {

struct EngineConfig {
  int64_t max_batch_size = 8;
  int64_t token_budget = 256;  // tokens per step; raised to max_batch_size when below it
  KvType kv_type = KvType::kF16;
  int64_t block_size = 16;
  // KV capacity in blocks; 0: enough for max_batch_size sequences of the full context.
  int64_t kv_blocks = 0;
};

struct EngineRequest {
  std::vector<int32_t> prompt_ids;
  int64_t max_tokens = 64;
  SamplingParams sampling;
  int32_t stop_token = -1;  // usually EOS; -1 = never stop early
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
  // max_tokens < 1, a prompt longer than the context or a request that could not fit in the KV
  // cache even alone; a refused request leaves the engine as it was.
  SequenceId submit(const EngineRequest& request, std::optional<double> arrival_ms = {});

  // Runs one step. Returns false, doing nothing, when no request is waiting or running.
  // Requests are checked at submit(), so a step throws only when the backend fails; the
  // engine cannot continue after that.
  bool step();
  void run_until_idle();

  bool has_unfinished() const { return scheduler_.has_unfinished(); }
  const Sequence& sequence(SequenceId id) const { return scheduler_.sequence(id); }
  std::vector<int32_t> output_ids(SequenceId id) const { return sequence(id).output_ids(); }
  bool is_finished(SequenceId id) const;

  const Scheduler& scheduler() const { return scheduler_; }
  const KvBlockPool& pool() const { return pool_; }
  KvUsage kv_usage() const { return pool_.usage(); }
  const model::PagedKvCache& kv_cache() const { return cache_; }
  int64_t steps_run() const { return steps_run_; }

  // Milliseconds on the steady clock since the engine was created: the clock of every record.
  double now_ms() const;

 private:
  // What the engine remembers of a request until it finishes.
  struct RequestState {
    Sampler sampler;
    telemetry::RequestRecord record;
  };

  std::vector<model::SequenceStep> sequence_steps(const StepBatch& batch,
                                                  std::vector<std::vector<int32_t>>& slots) const;
  std::vector<int32_t> sample(const StepBatch& batch, const std::vector<float>& logits);
  void report_step(const StepBatch& batch, telemetry::StepRecord record, double started_ms);
  void report_finished();

  model::Transformer& transformer_;
  uint64_t weight_bytes_;
  telemetry::Observer* observer_;
  KvBlockPool pool_;
  Scheduler scheduler_;
  model::PagedKvCache cache_;
  std::map<SequenceId, RequestState> requests_;  // unfinished requests
  std::chrono::steady_clock::time_point epoch_;
  int64_t steps_run_ = 0;
};

// The scheduler configuration an engine configuration gives for a model.
SchedulerConfig scheduler_config(const EngineConfig& config, const model::ModelConfig& model);
// The KV blocks an engine configuration gives for a model (kv_blocks, or its default).
int64_t kv_block_count(const EngineConfig& config, const model::ModelConfig& model);

}  // namespace servescope::serving
