#include "engine/serving/scheduler.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "engine/core/error.h"
#include "engine/serving/kv_budget.h"

namespace servescope::serving {

std::string_view batching_policy_name(BatchingPolicy policy) {
  return policy == BatchingPolicy::kStatic ? "static" : "continuous";
}

BatchingPolicy parse_batching_policy(std::string_view name) {
  if (name == "continuous") return BatchingPolicy::kContinuous;
  if (name == "static") return BatchingPolicy::kStatic;
  throw InputError("unknown batching policy '" + std::string(name) + "' (continuous or static)");
}

namespace {

void validate_batch_wait(double batch_wait_ms) {
  if (!(batch_wait_ms >= 0.0) || std::isinf(batch_wait_ms)) {
    throw InputError("scheduler: the batch wait must be a finite number of ms >= 0");
  }
}

}  // namespace

void validate(const SchedulerConfig& config) {
  if (config.max_batch_size < 1) throw InputError("scheduler: max batch size must be at least 1");
  if (config.token_budget < config.max_batch_size) {
    throw InputError("scheduler: the token budget (" + std::to_string(config.token_budget) +
                     ") must be at least the max batch size (" +
                     std::to_string(config.max_batch_size) +
                     ") so that every running sequence can decode in every step");
  }
  if (config.context_length < 1) throw InputError("scheduler: context length must be positive");
  validate_batch_wait(config.batch_wait_ms);
}

telemetry::StepRecord step_record_counts(const StepBatch& batch, const SchedulerConfig& config,
                                         const KvBlockPool& pool) {
  telemetry::StepRecord record;
  record.step_index = batch.step_index;
  record.prefill_tokens = batch.prefill_tokens;
  record.decode_tokens = batch.decode_tokens;
  record.sequences = static_cast<int64_t>(batch.sequences.size());
  record.max_batch_size = config.max_batch_size;
  record.kv_blocks_used = pool.blocks_used();
  record.kv_blocks_free = pool.blocks_free();
  return record;
}

std::vector<telemetry::SequenceWork> step_work(const StepBatch& batch) {
  std::vector<telemetry::SequenceWork> work;
  for (const ScheduledSequence& e : batch.sequences) {
    work.push_back({e.count, e.start, e.samples_next_token});
  }
  return work;
}

Scheduler::Scheduler(const SchedulerConfig& config, KvBlockPool& pool)
    : config_(config), pool_(pool) {
  validate(config);
  slot_taken_.assign(static_cast<size_t>(config.max_batch_size), false);
}

SequenceId Scheduler::submit(const Request& request, double arrival_ms) {
  const auto prompt = static_cast<int64_t>(request.prompt_ids.size());
  if (prompt == 0) throw InputError("the prompt is empty");
  if (request.max_tokens < 1) throw InputError("max tokens must be at least 1");
  if (prompt > config_.context_length) {
    throw InputError("the prompt has " + std::to_string(prompt) +
                     " tokens, more than the model's context of " +
                     std::to_string(config_.context_length));
  }
  if (prompt > context_limit()) {
    throw InputError("the prompt needs " + std::to_string(prompt) + " tokens; the KV budget of " +
                     iec_bytes(kv_bytes_per_block(pool_.layout()) *
                               static_cast<uint64_t>(pool_.blocks_total())) +
                     " holds " + std::to_string(context_limit()) + " tokens; raise " +
                     config_.kv_budget_setting);
  }
  // Within the limit a request always fits the pool alone: it stops when it reaches it.

  Sequence s;
  s.id = next_id_++;
  s.tokens = request.prompt_ids;
  s.prompt_length = prompt;
  s.max_tokens = request.max_tokens;
  s.stop_token = request.stop_token;
  s.arrival_order = s.id;
  s.arrival_ms = arrival_ms;
  waiting_.push_back(s.id);
  sequences_.emplace(s.id, std::move(s));
  return waiting_.back();
}

std::vector<SequenceId> Scheduler::submit_samples(const Request& request, int64_t n,
                                                  double arrival_ms) {
  if (n < 1) throw InputError("the number of samples must be at least 1");
  if (n > 1 && !config_.keep_kv) {
    throw InputError("samples of one prompt share its KV cache, and this engine keeps none");
  }
  const SequenceId first = submit(request, arrival_ms);
  std::vector<SequenceId> ids{first};
  Sequence& parent = get(first);
  for (int64_t i = 1; i < n; ++i) {
    Sequence s = parent;  // the same prompt, limits and arrival; waiting for the prompt's logits
    s.samples_to_fork.clear();
    s.id = next_id_++;
    s.arrival_order = s.id;
    s.sample_of = first;
    parent.samples_to_fork.push_back(s.id);
    ids.push_back(s.id);
    sequences_.emplace(s.id, std::move(s));
  }
  return ids;
}

StepBatch Scheduler::schedule(double now_ms) {
  if (step_in_flight_) {
    throw std::logic_error("Scheduler::schedule: the previous step was not completed");
  }
  StepBatch batch;
  batch.step_index = next_step_++;
  int64_t budget = config_.token_budget;
  const bool is_static = config_.policy == BatchingPolicy::kStatic;
  // Static: the whole batch is admitted at once (its prompts then prefill in chunks under the
  // budget, as admitted prompts do) and nobody joins until it is done.
  if (is_static && running_.empty() && !collecting_batch(now_ms)) admit_static_batch(batch);

  // 1. Decodes, oldest first. Preemption takes from the back, so it never hits a sequence
  //    already in this batch; a sequence that had to preempt itself was the last one.
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Sequence& s = get(running_[i]);
    if (s.computed_tokens < s.prefill_end) continue;
    if (!reserve_decode_slot(i, batch)) break;
    add_to_batch(s, 1, batch);
    budget -= 1;
  }
  // 2. Chunks of prompts already admitted (their slots were reserved at admission).
  for (const SequenceId id : running_) {
    if (budget == 0) break;
    Sequence& s = get(id);
    if (s.computed_tokens >= s.prefill_end) continue;
    const int64_t count = std::min(s.prefill_end - s.computed_tokens, budget);
    add_to_batch(s, count, batch);
    budget -= count;
  }
  // 3. New and resumed requests, unless this step had to preempt: they would only be preempted
  //    again.
  if (!is_static && batch.preempted.empty()) admit_waiting(budget, batch);

  step_in_flight_ = !batch.empty();
  return batch;
}

bool Scheduler::collecting_batch(double now_ms) const {
  const std::optional<double> due = batch_due_ms();
  return due && static_cast<int64_t>(waiting_.size()) < config_.max_batch_size && now_ms < *due;
}

std::optional<double> Scheduler::batch_due_ms() const {
  if (config_.policy != BatchingPolicy::kStatic || !running_.empty() || waiting_.empty()) {
    return std::nullopt;
  }
  double oldest = sequence(waiting_.front()).arrival_ms;
  for (const SequenceId id : waiting_) oldest = std::min(oldest, sequence(id).arrival_ms);
  return oldest + config_.batch_wait_ms;
}

void Scheduler::set_batching(BatchingPolicy policy, double batch_wait_ms) {
  validate_batch_wait(batch_wait_ms);
  config_.policy = policy;
  config_.batch_wait_ms = batch_wait_ms;
}

void Scheduler::admit_static_batch(StepBatch& batch) {
  while (!waiting_.empty() && static_cast<int64_t>(running_.size()) < config_.max_batch_size) {
    Sequence& s = get(waiting_.front());
    if (!pool_.can_allocate(s.tokens)) break;  // FCFS, as in continuous batching
    waiting_.pop_front();
    admit(s, batch);
  }
}

bool Scheduler::reserve_decode_slot(size_t running_index, StepBatch& batch) {
  const SequenceId id = running_[running_index];
  const auto needed = static_cast<int64_t>(get(id).tokens.size());
  while (pool_.sequence_tokens(id) < needed) {
    if (pool_.can_append(id)) {
      pool_.append(id);
      break;
    }
    const bool is_newest = running_.back() == id;
    preempt_newest(batch);
    if (is_newest) return false;
  }
  return true;
}

void Scheduler::preempt_newest(StepBatch& batch) {
  const SequenceId id = running_.back();
  running_.pop_back();
  pool_.preempt(id);
  Sequence& s = get(id);
  release_batch_slot(s);
  s.status = SequenceStatus::kWaiting;
  s.computed_tokens = 0;
  s.prefill_end = 0;
  ++s.preemptions;
  // Front of the queue: pushed newest first, so older preempted sequences end up ahead.
  waiting_.push_front(id);
  batch.preempted.push_back(id);
}

void Scheduler::admit_waiting(int64_t& budget, StepBatch& batch) {
  while (!waiting_.empty() && budget > 0 &&
         static_cast<int64_t>(running_.size()) < config_.max_batch_size) {
    Sequence& s = get(waiting_.front());
    // FCFS: a request that does not fit blocks the ones behind it until blocks are freed.
    if (!pool_.can_allocate(s.tokens)) break;
    waiting_.pop_front();
    admit(s, batch);
    const int64_t count = std::min(s.prefill_end - s.computed_tokens, budget);
    add_to_batch(s, count, batch);
    budget -= count;
  }
}

// Blocks for its known tokens (a cached prefix is reused), a batch slot, and the running set.
void Scheduler::admit(Sequence& s, StepBatch& batch) {
  const int64_t cached = pool_.allocate(s.id, s.tokens);
  if (s.preemptions == 0) s.cached_prompt_tokens = cached;
  s.computed_tokens = cached;
  s.prefill_end = static_cast<int64_t>(s.tokens.size());
  s.status = SequenceStatus::kRunning;
  s.batch_slot = take_batch_slot();
  running_.push_back(s.id);
  batch.admitted.push_back(s.id);
}

void Scheduler::add_to_batch(Sequence& s, int64_t count, StepBatch& batch) {
  ScheduledSequence e;
  e.sequence = s.id;
  e.start = s.computed_tokens;
  e.count = count;
  e.slot = s.batch_slot;
  e.longest = std::min(s.prompt_length + s.max_tokens, config_.context_length);
  e.is_prefill = s.computed_tokens < s.prefill_end;
  // Computing tokens again: after a preemption, or every token without a KV cache.
  const bool again = s.preemptions > 0 || s.output_length() > 0;
  e.phase = !e.is_prefill ? telemetry::SequencePhase::kDecode
            : again       ? telemetry::SequencePhase::kRecompute
                          : telemetry::SequencePhase::kPrefill;
  e.samples_next_token = e.start + count == static_cast<int64_t>(s.tokens.size());
  if (e.samples_next_token) e.forks = s.samples_to_fork;
  e.tokens.assign(s.tokens.begin() + e.start, s.tokens.begin() + e.start + count);
  const std::span<const BlockId> table = pool_.block_table(s.id);
  e.block_table.assign(table.begin(), table.end());
  (e.is_prefill ? batch.prefill_tokens : batch.decode_tokens) += count;
  if (s.first_scheduled_step < 0) s.first_scheduled_step = batch.step_index;
  batch.sequences.push_back(std::move(e));
}

// The lowest free slot: running sequences never exceed max_batch_size, so one is free.
int64_t Scheduler::take_batch_slot() {
  const auto it = std::ranges::find(slot_taken_, false);
  if (it == slot_taken_.end()) throw std::logic_error("Scheduler: no free batch slot");
  *it = true;
  return it - slot_taken_.begin();
}

void Scheduler::release_batch_slot(Sequence& s) {
  slot_taken_[static_cast<size_t>(s.batch_slot)] = false;
  s.batch_slot = -1;
}

void Scheduler::complete_step(const StepBatch& batch, std::span<const int32_t> next_tokens,
                              std::span<const int32_t> fork_tokens) {
  if (!step_in_flight_ || batch.step_index != next_step_ - 1) {
    throw std::logic_error("Scheduler::complete_step: not the batch of the last schedule()");
  }
  if (next_tokens.size() != batch.sequences.size()) {
    throw std::logic_error("Scheduler::complete_step: one next token per scheduled sequence");
  }
  size_t forks = 0;
  for (const ScheduledSequence& e : batch.sequences) forks += e.forks.size();
  if (fork_tokens.size() != forks) {
    throw std::logic_error("Scheduler::complete_step: one first token per fork");
  }
  step_in_flight_ = false;
  size_t next_fork = 0;
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    const ScheduledSequence& e = batch.sequences[i];
    const std::span<const int32_t> tokens_of_forks = fork_tokens.subspan(next_fork, e.forks.size());
    next_fork += e.forks.size();
    // Finished from outside meanwhile (and perhaps already taken): its result is dropped.
    const auto it = sequences_.find(e.sequence);
    if (it == sequences_.end() || it->second.status != SequenceStatus::kRunning) continue;
    Sequence& s = it->second;
    if (s.computed_tokens != e.start) {
      throw std::logic_error("Scheduler::complete_step: sequence " + std::to_string(s.id) +
                             " was not at the scheduled position");
    }
    s.computed_tokens += e.count;
    if (config_.keep_kv) {
      pool_.cache_computed_blocks(s.id, std::span(s.tokens).first(s.computed_tokens));
    }
    if (!e.samples_next_token) continue;
    s.tokens.push_back(next_tokens[i]);
    if (s.first_token_step < 0) s.first_token_step = batch.step_index;
    // Before the parent may leave and free its blocks. Samples without a batch slot queue at
    // the front in sample order.
    size_t queued = 0;
    for (size_t k = 0; k < e.forks.size(); ++k) {
      queued += fork_sample(s, e.forks[k], tokens_of_forks[k], batch.step_index, queued) ? 1 : 0;
    }
    after_new_token(s);
  }
}

void Scheduler::after_new_token(Sequence& s) {
  if (const FinishReason reason = finish_reason_now(s); reason != FinishReason::kNone) {
    retire(s, reason);
  } else if (!config_.keep_kv) {
    forget_context(s);
  }
}

bool Scheduler::fork_sample(Sequence& parent, SequenceId child_id, int32_t token,
                            int64_t step_index, size_t queue_position) {
  const auto it = sequences_.find(child_id);
  if (it == sequences_.end() || it->second.sample_of != parent.id) return false;  // cancelled
  Sequence& child = it->second;
  std::erase(parent.samples_to_fork, child_id);
  child.sample_of = -1;
  child.tokens.push_back(token);
  child.first_token_step = step_index;
  if (static_cast<int64_t>(running_.size()) < config_.max_batch_size) {
    pool_.fork(parent.id, child.id);
    child.cached_prompt_tokens = child.prompt_length;  // computed once, by the parent
    child.computed_tokens = parent.computed_tokens;
    child.prefill_end = parent.computed_tokens;
    child.first_scheduled_step = step_index;
    child.status = SequenceStatus::kRunning;
    child.batch_slot = take_batch_slot();
    running_.push_back(child.id);
  } else {
    // No batch slot: it queues with its token, as a preempted sequence does, and computes its
    // context when admitted (the prompt's full blocks are usually still in the prefix cache).
    waiting_.insert(waiting_.begin() + static_cast<std::ptrdiff_t>(queue_position), child.id);
  }
  after_new_token(child);
  return child.status == SequenceStatus::kWaiting;  // queued, and not finished at once
}

void Scheduler::forget_context(Sequence& s) {
  pool_.free(s.id);
  s.computed_tokens = 0;
  if (pool_.can_allocate(s.tokens)) {
    pool_.allocate(s.id, s.tokens);  // nothing was cached: every token is computed again
    s.prefill_end = static_cast<int64_t>(s.tokens.size());
    return;
  }
  // No room for the whole context now: back to the front of the queue until there is.
  release_batch_slot(s);
  running_.erase(std::ranges::find(running_, s.id));
  s.status = SequenceStatus::kWaiting;
  s.prefill_end = 0;
  waiting_.push_front(s.id);
}

FinishReason Scheduler::finish_reason_now(const Sequence& s) const {
  if (s.tokens.back() == s.stop_token) return FinishReason::kStopToken;
  if (s.output_length() >= s.max_tokens) return FinishReason::kMaxTokens;
  if (static_cast<int64_t>(s.tokens.size()) >= context_limit()) {
    return FinishReason::kContextFull;
  }
  return FinishReason::kNone;
}

int64_t Scheduler::context_limit() const {
  return std::min(config_.context_length, pool_.blocks_total() * pool_.layout().block_size);
}

bool Scheduler::finish(SequenceId sequence, FinishReason reason) {
  const auto it = sequences_.find(sequence);
  if (it == sequences_.end() || it->second.status == SequenceStatus::kFinished) return false;
  retire(it->second, reason);
  return true;
}

void Scheduler::retire(Sequence& s, FinishReason reason) {
  if (s.status == SequenceStatus::kRunning) {
    pool_.free(s.id);
    release_batch_slot(s);
    running_.erase(std::ranges::find(running_, s.id));
  } else if (s.sample_of >= 0) {  // still waiting for the prompt's logits
    std::erase(get(s.sample_of).samples_to_fork, s.id);
    s.sample_of = -1;
  } else {
    waiting_.erase(std::ranges::find(waiting_, s.id));
  }
  s.status = SequenceStatus::kFinished;
  s.finish_reason = reason;
  s.finished_step = next_step_ - 1;
  finished_.push_back(s.id);
  // Samples that were to share this one's prompt cannot now: they end with it.
  while (!s.samples_to_fork.empty()) retire(get(s.samples_to_fork.front()), reason);
}

const Sequence& Scheduler::sequence(SequenceId id) const {
  const auto it = sequences_.find(id);
  if (it == sequences_.end()) {
    throw std::out_of_range("Scheduler: no sequence " + std::to_string(id));
  }
  return it->second;
}

Sequence& Scheduler::get(SequenceId id) {
  const auto it = sequences_.find(id);
  if (it == sequences_.end()) {
    throw std::logic_error("Scheduler: no sequence " + std::to_string(id));
  }
  return it->second;
}

std::vector<Sequence> Scheduler::take_finished() {
  std::vector<Sequence> taken;
  for (const SequenceId id : finished_) {
    auto node = sequences_.extract(id);
    taken.push_back(std::move(node.mapped()));
  }
  finished_.clear();
  return taken;
}

}  // namespace servescope::serving
