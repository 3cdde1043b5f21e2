#include "engine/serving/engine.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <thread>

#include "engine/core/error.h"
#include "engine/serving/kv_budget.h"

namespace servescope::serving {

SchedulerConfig scheduler_config(const EngineConfig& config, const model::ModelConfig& model) {
  SchedulerConfig s;
  s.max_batch_size = config.max_batch_size;
  s.token_budget = std::max(config.token_budget, config.max_batch_size);
  s.context_length = model.context_length;
  s.policy = config.batching;
  s.batch_wait_ms = config.batch_wait_ms;
  s.kv_budget_setting = config.kv_budget_setting;
  s.keep_kv = config.keep_kv;
  return s;
}

int64_t kv_block_count(const EngineConfig& config, const model::ModelConfig& model) {
  if (config.kv_blocks < 0) throw InputError("the KV cache needs at least one block");
  if (config.kv_blocks > 0) return config.kv_blocks;
  if (config.block_size < 1) throw InputError("the KV block size must be at least 1");
  const int64_t needed = std::max<int64_t>(1, config.max_batch_size) *
                         blocks_for_tokens(model.context_length, config.block_size);
  const uint64_t budget = config.kv_bytes > 0 ? config.kv_bytes : default_kv_budget_bytes();
  return kv_blocks_for_budget(kv_layout(model, config.kv_type, config.block_size), budget, needed);
}

Engine::Engine(model::Transformer& transformer, uint64_t weight_bytes, const EngineConfig& config,
               telemetry::Observer* observer)
    : transformer_(transformer),
      weight_bytes_(weight_bytes),
      finished_history_(config.finished_history),
      kernel_spans_(config.kernel_spans),
      warmed_up_(config.warmed_up),
      observer_(observer),
      pool_(kv_layout(transformer.config(), config.kv_type, config.block_size),
            kv_block_count(config, transformer.config())),
      scheduler_(scheduler_config(config, transformer.config()), pool_),
      cache_(model::create_paged_kv_cache(transformer.config(), transformer.backend(),
                                          config.kv_type,
                                          pool_.blocks_total() * pool_.layout().block_size)) {
  if (config.finished_history < 0) throw InputError("the finished history cannot be negative");
  if (observer_ != nullptr) {
    pool_.set_event_sink([this](const telemetry::KvEvent& event) { forward_kv_event(event); });
  }
}

void Engine::forward_kv_event(const telemetry::KvEvent& event) {
  telemetry::KvEvent stamped = event;
  stamped.step_index = event_step_index_;
  stamped.time_ms = event_time_ms_.value_or(now_ms());
  observer_->on_kv_event(stamped);
}

SequenceId Engine::submit(const EngineRequest& request, std::optional<double> arrival_ms) {
  return submit_samples(request, 1, arrival_ms).front();
}

std::vector<SequenceId> Engine::submit_samples(const EngineRequest& request, int64_t n,
                                               std::optional<double> arrival_ms) {
  validate(request.sampling);
  if (request.top_k_alternatives && *request.top_k_alternatives < 0) {
    throw InputError("the number of top alternatives must be 0 or more");
  }
  // Checked here, not in the forward pass: a bad id found mid-step would take the whole
  // batch down with it.
  const int64_t vocab = transformer_.config().vocab_size;
  for (const int32_t token : request.prompt_ids) {
    if (token < 0 || token >= vocab) {
      throw InputError("token id " + std::to_string(token) + " is outside the vocabulary (0.." +
                       std::to_string(vocab - 1) + ")");
    }
  }
  const double arrived_ms = arrival_ms.value_or(now_ms());
  const std::vector<SequenceId> ids = scheduler_.submit_samples(request, n, arrived_ms);
  for (size_t i = 0; i < ids.size(); ++i) {
    SamplingParams sampling = request.sampling;
    sampling.seed += i;
    RequestState& state =
        requests_.emplace(ids[i], RequestState{Sampler(sampling), {}, request.top_k_alternatives})
            .first->second;
    state.record.request_id = ids[i];
    state.record.prompt_tokens = static_cast<int64_t>(request.prompt_ids.size());
    state.record.arrival_ms = arrived_ms;
    state.record.first_scheduled_ms = -1.0;  // set by the first step that runs (or forks) it
    if (observer_ != nullptr) {
      observer_->on_arrival({ids[i], state.record.prompt_tokens, arrived_ms});
    }
  }
  return ids;
}

bool Engine::cancel(SequenceId id) {
  if (!scheduler_.knows(id) || scheduler_.sequence(id).status == SequenceStatus::kFinished) {
    return false;
  }
  if (in_step_) {
    pending_cancels_.push_back(id);
    return true;
  }
  event_step_index_ = scheduler_.next_step_index();
  scheduler_.finish(id, FinishReason::kCancelled);
  report_finished(scheduler_.take_finished());
  return true;
}

void Engine::apply_cancels() {
  std::vector<SequenceId> ids;
  ids.swap(pending_cancels_);
  for (const SequenceId id : ids) cancel(id);
}

const Sequence& Engine::sequence(SequenceId id) const {
  if (scheduler_.knows(id)) return scheduler_.sequence(id);
  const auto it = finished_.find(id);
  if (it == finished_.end()) {
    throw std::out_of_range("Engine: request " + std::to_string(id) +
                            " was never submitted or finished too long ago to be kept");
  }
  return it->second;
}

bool Engine::is_finished(SequenceId id) const {
  if (id < 0 || id >= scheduler_.submitted()) {
    throw std::out_of_range("Engine: no request " + std::to_string(id));
  }
  return !scheduler_.knows(id) || scheduler_.sequence(id).status == SequenceStatus::kFinished;
}

telemetry::KvSnapshot Engine::kv_snapshot() const {
  telemetry::KvSnapshot snapshot = pool_.snapshot();
  snapshot.step_index = last_step_index_;
  snapshot.time_ms = now_ms();
  for (const compute::KvStore& layer : cache_.layers) {
    const uint64_t row = gguf::row_bytes(layer.type, layer.kv_dim);
    snapshot.layer_bytes_reserved.push_back(2 * row * static_cast<uint64_t>(layer.slots));
  }
  return snapshot;
}

bool Engine::step() {
  clock_.resume();  // a pause held since the last step ends here
  if (!scheduler_.has_unfinished()) return false;
  const double started_ms = now_ms();
  if (scheduler_.collecting_batch(started_ms)) return false;
  event_step_index_ = scheduler_.next_step_index();
  transformer_.backend().take_kernel_times();  // this step's kernels only
  const StepBatch batch = scheduler_.schedule(started_ms);
  if (batch.empty()) return false;
  in_step_ = true;
  // The pool as the step runs: counted before finished sequences release their blocks.
  telemetry::StepRecord record = step_record_counts(batch, scheduler_.config(), pool_);
  record.start_ms = started_ms;
  record.cold = !warmed_up_ && steps_run_ == 0;

  for (const ScheduledSequence& e : batch.sequences) {
    telemetry::RequestRecord& r = requests_.at(e.sequence).record;
    if (r.first_scheduled_ms < 0.0) r.first_scheduled_ms = started_ms;
  }
  std::vector<std::vector<int32_t>> slots;
  const std::vector<model::SequenceStep> steps = sequence_steps(batch, slots);
  copy_shared_blocks();
  const double scheduled_ms = now_ms();
  const std::vector<float> logits = forward(steps, record);
  const double forwarded_ms = now_ms();
  std::vector<telemetry::TokenRecord> tokens;
  std::vector<int32_t> fork_tokens;
  const std::vector<int32_t> next_tokens = sample(batch, logits, fork_tokens, tokens);
  const double sampled_ms = now_ms();
  record.schedule_ms = scheduled_ms - started_ms;
  record.forward_ms = forwarded_ms - scheduled_ms;
  record.sample_ms = sampled_ms - forwarded_ms;
  // The KV events of completing the step (forks among them) carry the time a fork's life in the
  // running batch begins, the time its record says it was first scheduled.
  const double completed_ms = now_ms();
  event_time_ms_ = completed_ms;
  scheduler_.complete_step(batch, next_tokens, fork_tokens);
  event_time_ms_.reset();

  const double finished_ms = now_ms();
  // One timestamp per output token: the ones this step produced get the step's end. A
  // sequence that finished has left the scheduler's running set but not yet its records.
  const auto stamp_tokens = [&](SequenceId id) {
    if (!scheduler_.knows(id)) return;  // a fork cancelled with its parent during the step
    const Sequence& s = scheduler_.sequence(id);
    telemetry::RequestRecord& r = requests_.at(id).record;
    r.token_times_ms.resize(static_cast<size_t>(s.output_length()), finished_ms);
    if (s.first_scheduled_step == batch.step_index && r.first_scheduled_ms < 0.0) {
      r.first_scheduled_ms = completed_ms;  // a fork that joined the running batch now
    }
  };
  for (const ScheduledSequence& e : batch.sequences) {
    stamp_tokens(e.sequence);
    for (const SequenceId fork : e.forks) stamp_tokens(fork);
  }
  ++steps_run_;
  last_step_index_ = batch.step_index;
  std::vector<Sequence> finished = scheduler_.take_finished();
  report_step(batch, next_tokens, finished, record);
  if (observer_ != nullptr) {
    for (telemetry::TokenRecord& token : tokens) {
      token.time_ms = finished_ms;
      observer_->on_token(token);
    }
  }
  report_finished(std::move(finished));
  in_step_ = false;
  apply_cancels();
  return true;
}
// The batched forward pass; with kernel spans asked for, each operation's span on the engine
// clock.
std::vector<float> Engine::forward(std::span<const model::SequenceStep> steps,
                                   telemetry::StepRecord& record) {
  compute::Backend& backend = transformer_.backend();
  if (!kernel_spans_) return transformer_.forward_batch(steps, cache_);
  record.spans_measured = backend.set_kernel_spans(true);
  if (!record.spans_measured) record.spans_note = backend.why_no_kernel_spans();
  std::vector<float> logits = transformer_.forward_batch(steps, cache_);
  record.spans = backend.take_kernel_spans();
  backend.set_kernel_spans(false);
  if (record.spans_measured && record.spans.empty()) {
    record.spans_measured = false;  // not "no operations": none was timed
    record.spans_note =
        "the backend timed no operation of this step (Vulkan: more dispatches than its "
        "timestamp queries, which it enlarges for the next step)";
  }
  for (telemetry::KernelSpan& span : record.spans) {  // stamped on the steady clock
    span.start_ms = clock_.to_serving_ms(span.start_ms);
    span.end_ms = clock_.to_serving_ms(span.end_ms);
  }
  return logits;
}

void Engine::run_until_idle() {
  while (has_unfinished()) {
    if (step()) continue;
    const std::optional<double> due = batch_due_ms();
    if (!due) throw std::logic_error("Engine: requests are waiting but no step can run");
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(*due - now_ms()));
  }
}

std::vector<model::SequenceStep> Engine::sequence_steps(
    const StepBatch& batch, std::vector<std::vector<int32_t>>& slots) const {
  slots.resize(batch.sequences.size());
  std::vector<model::SequenceStep> steps;
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    const ScheduledSequence& e = batch.sequences[i];
    slots[i] = BlockTable{e.block_table, pool_.layout().block_size}.slots(e.start + e.count);
    steps.push_back({e.tokens, e.start, slots[i],
                     e.samples_next_token ? model::LogitRows::kLast : model::LogitRows::kNone});
  }
  return steps;
}

std::vector<int32_t> Engine::sample(const StepBatch& batch, const std::vector<float>& logits,
                                    std::vector<int32_t>& fork_tokens,
                                    std::vector<telemetry::TokenRecord>& tokens) {
  const auto vocab = static_cast<size_t>(transformer_.config().vocab_size);
  std::vector<int32_t> next_tokens;
  size_t row = 0;
  for (const ScheduledSequence& e : batch.sequences) {
    if (!e.samples_next_token) {
      next_tokens.push_back(-1);  // not read by the scheduler
      continue;
    }
    const std::span<const float> row_logits(logits.data() + row * vocab, vocab);
    const int64_t position = e.start + e.count;
    next_tokens.push_back(draw(e.sequence, row_logits, batch.step_index, position, tokens));
    // Each sample of the prompt draws from the same logits with its own sampler.
    for (const SequenceId fork : e.forks) {
      fork_tokens.push_back(draw(fork, row_logits, batch.step_index, position, tokens));
    }
    ++row;
  }
  return next_tokens;
}

// One request's next token from its row of logits, and its TokenRecord when it asked for them.
int32_t Engine::draw(SequenceId id, std::span<const float> row_logits, int64_t step_index,
                     int64_t position, std::vector<telemetry::TokenRecord>& tokens) {
  RequestState& state = requests_.at(id);
  const SampledToken sampled = state.sampler.sample_with_probability(row_logits);
  if (state.top_k_alternatives) {
    const TokenProbabilities p =
        token_probabilities(row_logits, sampled.id, *state.top_k_alternatives);
    telemetry::TokenRecord token;
    token.request_id = id;
    token.step_index = step_index;
    token.position = position;
    token.output_index = position - state.record.prompt_tokens;
    token.id = sampled.id;
    token.prob = p.prob;
    token.sampling_prob = sampled.sampling_prob;
    token.top = p.top;
    tokens.push_back(std::move(token));
  }
  return sampled.id;
}

void Engine::copy_shared_blocks() {
  const auto block_size = static_cast<int32_t>(pool_.layout().block_size);
  for (const BlockCopy& copy : pool_.take_block_copies()) {
    for (compute::KvStore& layer : cache_.layers) {
      transformer_.backend().copy_kv_slots(layer, copy.from * block_size, copy.to * block_size,
                                           static_cast<int32_t>(copy.slots));
    }
  }
}

void Engine::report_step(const StepBatch& batch, std::span<const int32_t> next_tokens,
                         std::span<const Sequence> finished, telemetry::StepRecord& record) {
  record.kernel_times = transformer_.backend().take_kernel_times();
  // A forward pass always takes time: all zeros means the backend did not time its kernels.
  record.kernel_times_measured = record.kernel_times.total_ms() > 0.0;
  const std::vector<telemetry::SequenceWork> work = step_work(batch);
  const telemetry::StepCost cost = telemetry::estimate_step_cost(
      transformer_.config(), weight_bytes_, pool_.bytes_per_token(), work);
  record.weight_bytes_read = cost.weight_bytes_read;
  record.kv_bytes_read = cost.kv_bytes_read;
  record.kv_bytes_written = cost.kv_bytes_written;
  record.flops = cost.flops();
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    const ScheduledSequence& e = batch.sequences[i];
    record.batch.push_back({e.sequence, e.slot, e.phase, e.start, e.tokens,
                            e.samples_next_token ? next_tokens[i] : -1, e.longest});
  }
  record.admitted = batch.admitted;
  record.preempted = batch.preempted;
  for (const Sequence& s : finished) record.finished.push_back(s.id);
  record.end_ms = now_ms();
  record.wall_ms = record.end_ms - record.start_ms;
  if (observer_ != nullptr) observer_->on_step(record);
}

void Engine::report_finished(std::vector<Sequence> finished) {
  for (Sequence& s : finished) {
    auto node = requests_.extract(s.id);
    telemetry::RequestRecord& record = node.mapped().record;
    record.cached_prompt_tokens = s.cached_prompt_tokens;
    record.preemptions = s.preemptions;
    record.finish_reason = s.finish_reason;
    record.output_ids = s.output_ids();
    record.finished_ms = now_ms();
    if (observer_ != nullptr) observer_->on_request(record);
    if (finished_history_ == 0) continue;
    finished_order_.push_back(s.id);
    finished_.emplace(s.id, std::move(s));
    if (static_cast<int64_t>(finished_order_.size()) > finished_history_) {
      finished_.erase(finished_order_.front());
      finished_order_.pop_front();
    }
  }
}

}  // namespace servescope::serving
