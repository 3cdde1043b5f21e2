#include "engine/serving/engine.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/core/error.h"

namespace servescope::serving {

SchedulerConfig scheduler_config(const EngineConfig& config, const model::ModelConfig& model) {
  SchedulerConfig s;
  s.max_batch_size = config.max_batch_size;
  s.token_budget = std::max(config.token_budget, config.max_batch_size);
  s.context_length = model.context_length;
  return s;
}

int64_t kv_block_count(const EngineConfig& config, const model::ModelConfig& model) {
  if (config.kv_blocks < 0) throw InputError("the KV cache needs at least one block");
  if (config.kv_blocks > 0) return config.kv_blocks;
  if (config.block_size < 1) throw InputError("the KV block size must be at least 1");
  return std::max<int64_t>(1, config.max_batch_size) *
         blocks_for_tokens(model.context_length, config.block_size);
}

Engine::Engine(model::Transformer& transformer, uint64_t weight_bytes, const EngineConfig& config,
               telemetry::Observer* observer)
    : transformer_(transformer),
      weight_bytes_(weight_bytes),
      observer_(observer),
      pool_(kv_layout(transformer.config(), config.kv_type, config.block_size),
            kv_block_count(config, transformer.config())),
      scheduler_(scheduler_config(config, transformer.config()), pool_),
      cache_(model::create_paged_kv_cache(transformer.config(), transformer.backend(),
                                          kv_ggml_type(config.kv_type),
                                          pool_.blocks_total() * pool_.layout().block_size)),
      epoch_(std::chrono::steady_clock::now()) {
  if (observer_ != nullptr) {
    pool_.set_event_sink(
        [this](const telemetry::KvEvent& event) { observer_->on_kv_event(event); });
  }
}

double Engine::now_ms() const {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - epoch_)
      .count();
}

SequenceId Engine::submit(const EngineRequest& request, std::optional<double> arrival_ms) {
  validate(request.sampling);
  // Checked here, not in the forward pass: a bad id found mid-step would take the whole
  // batch down with it.
  const int64_t vocab = transformer_.config().vocab_size;
  for (const int32_t token : request.prompt_ids) {
    if (token < 0 || token >= vocab) {
      throw InputError("token id " + std::to_string(token) + " is outside the vocabulary (0.." +
                       std::to_string(vocab - 1) + ")");
    }
  }
  const SequenceId id =
      scheduler_.submit({request.prompt_ids, request.max_tokens, request.stop_token});
  RequestState& state =
      requests_.emplace(id, RequestState{Sampler(request.sampling), {}}).first->second;
  state.record.request_id = id;
  state.record.prompt_tokens = static_cast<int64_t>(request.prompt_ids.size());
  state.record.arrival_ms = arrival_ms.value_or(now_ms());
  state.record.first_scheduled_ms = -1.0;  // set by the first step that runs any of its tokens
  return id;
}

bool Engine::is_finished(SequenceId id) const {
  return sequence(id).status == SequenceStatus::kFinished;
}

bool Engine::step() {
  if (!scheduler_.has_unfinished()) return false;
  const double started_ms = now_ms();
  transformer_.backend().take_kernel_times();  // this step's kernels only
  const StepBatch batch = scheduler_.schedule();
  if (batch.empty()) return false;
  // The pool as the step runs: counted before finished sequences release their blocks.
  const telemetry::StepRecord counts = step_record_counts(batch, scheduler_.config(), pool_);

  for (const ScheduledSequence& e : batch.sequences) {
    telemetry::RequestRecord& record = requests_.at(e.sequence).record;
    if (record.first_scheduled_ms < 0.0) record.first_scheduled_ms = started_ms;
  }
  std::vector<std::vector<int32_t>> slots;
  const std::vector<model::SequenceStep> steps = sequence_steps(batch, slots);
  const std::vector<float> logits = transformer_.forward_batch(steps, cache_);
  scheduler_.complete_step(batch, sample(batch, logits));

  const double finished_ms = now_ms();
  for (const ScheduledSequence& e : batch.sequences) {
    // One timestamp per output token: the ones this step produced get the step's end.
    const auto outputs = static_cast<size_t>(sequence(e.sequence).output_length());
    requests_.at(e.sequence).record.token_times_ms.resize(outputs, finished_ms);
  }
  ++steps_run_;
  report_step(batch, counts, started_ms);
  report_finished();
  return true;
}

void Engine::run_until_idle() {
  while (has_unfinished()) {
    if (!step()) throw std::logic_error("Engine: requests are waiting but no step can run");
  }
}

std::vector<model::SequenceStep> Engine::sequence_steps(
    const StepBatch& batch, std::vector<std::vector<int32_t>>& slots) const {
  const int64_t block_size = pool_.layout().block_size;
  slots.resize(batch.sequences.size());
  std::vector<model::SequenceStep> steps;
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    const ScheduledSequence& e = batch.sequences[i];
    // Position p lives in block table[p / block_size] at offset p % block_size.
    for (int64_t p = 0; p < e.start + e.count; ++p) {
      const BlockId block = e.block_table[static_cast<size_t>(p / block_size)];
      slots[i].push_back(static_cast<int32_t>(block * block_size + p % block_size));
    }
    steps.push_back({e.tokens, e.start, slots[i],
                     e.samples_next_token ? model::LogitRows::kLast : model::LogitRows::kNone});
  }
  return steps;
}

std::vector<int32_t> Engine::sample(const StepBatch& batch, const std::vector<float>& logits) {
  const auto vocab = static_cast<size_t>(transformer_.config().vocab_size);
  std::vector<int32_t> next_tokens;
  size_t row = 0;
  for (const ScheduledSequence& e : batch.sequences) {
    if (!e.samples_next_token) {
      next_tokens.push_back(-1);  // not read by the scheduler
      continue;
    }
    const std::span<const float> row_logits(logits.data() + row * vocab, vocab);
    next_tokens.push_back(requests_.at(e.sequence).sampler.sample(row_logits));
    ++row;
  }
  return next_tokens;
}

void Engine::report_step(const StepBatch& batch, telemetry::StepRecord record, double started_ms) {
  record.kernel_times = transformer_.backend().take_kernel_times();
  const std::vector<telemetry::SequenceWork> work = step_work(batch);
  const telemetry::StepCost cost = telemetry::estimate_step_cost(
      transformer_.config(), weight_bytes_, pool_.bytes_per_token(), work);
  record.weight_bytes_read = cost.weight_bytes_read;
  record.kv_bytes_read = cost.kv_bytes_read;
  record.kv_bytes_written = cost.kv_bytes_written;
  record.flops = cost.flops();
  record.wall_ms = now_ms() - started_ms;
  if (observer_ != nullptr) observer_->on_step(record);
}

void Engine::report_finished() {
  for (const SequenceId id : scheduler_.take_finished()) {
    const auto node = requests_.extract(id);
    telemetry::RequestRecord record = node.mapped().record;
    const Sequence& s = sequence(id);
    record.cached_prompt_tokens = s.cached_prompt_tokens;
    record.preemptions = s.preemptions;
    if (observer_ != nullptr) observer_->on_request(record);
  }
}

}  // namespace servescope::serving
