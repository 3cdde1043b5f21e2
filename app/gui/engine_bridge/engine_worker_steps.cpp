// The engine worker's requests and steps: the user's prompt prefilled and generated, the
// classmates kept coming, one engine step per event-loop turn (or per slow-motion tick), the
// user's attention captured, a failed step recovered from.
#include <QTimer>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "app/cli/commands.h"
#include "app/common/limits.h"
#include "app/common/data_files.h"
#include "app/gui/engine_bridge/engine_worker.h"
#include "app/gui/engine_bridge/worker_engines.h"
#include "app/gui/window/window_text.h"
#include "engine/compute/cpu_backend.h"
#include "engine/compute/roofs.h"
#include "engine/compute/vulkan/vulkan_backend.h"
#include "engine/core/error.h"
#include "engine/eval/quantize_model.h"
#include "engine/eval/variant_model.h"
#include "engine/model/model_provenance.h"
#include "engine/serving/kv_budget.h"
#include "engine/serving/warm_up.h"

namespace servescope::gui {

std::vector<int32_t> EngineWorker::tokenize(const QString& prompt) const {
  return tokenizer_->encode_with_bos(prompt.toStdString());
}

void EngineWorker::prefill(const QString& prompt) {
  if (!engine_ || user_request_ || prompt.isEmpty()) return;
  try {
    const std::vector<int32_t> ids = tokenize(prompt);
    if (ids == last_prefill_ids_) return;
    serving::EngineRequest request;
    request.prompt_ids = ids;
    request.max_tokens = 1;  // only the prompt's keys and values matter
    const serving::SequenceId id = engine_->submit(request);
    live_requests_.insert(id);
    ++requests_submitted_;
    last_prefill_ids_ = ids;
    Q_EMIT prompt_prefill_started(id);
  } catch (const std::exception& error) {
    Q_EMIT failed(QString("Prompt: %1").arg(error.what()));
    return;
  }
  update_timer();
}

void EngineWorker::forget_cached_prefixes() {
  if (!engine_) return;
  engine_->forget_cached_prefixes();
  last_prefill_ids_.clear();  // the typed prompt's prefill is gone with them
}

void EngineWorker::generate(const QString& prompt) {
  if (!engine_) {
    Q_EMIT generation_refused("No model is loaded yet; open a GGUF model first.");
    return;
  }
  if (user_request_) return;  // one generation at a time: its generation_finished answers
  try {
    serving::EngineRequest request;
    request.prompt_ids = tokenize(prompt);
    request.max_tokens = max_tokens_;
    request.sampling = sampling_;
    request.stop_token = tokenizer_->vocabulary().eos_id;
    request.top_k_alternatives = kAlternatives;
    const auto context = engine_->scheduler().config().context_length;
    if (static_cast<int64_t>(request.prompt_ids.size()) >= context) {
      throw InputError("the prompt is " + std::to_string(request.prompt_ids.size()) +
                       " tokens but the model's context holds " + std::to_string(context) +
                       "; shorten it so there is room to generate");
    }
    const std::vector<serving::SequenceId> ids = engine_->submit_samples(request, samples_);
    user_request_ = ids.front();
    user_samples_ = {ids.begin() + 1, ids.end()};
    live_requests_.insert(ids.begin(), ids.end());
    requests_submitted_ += static_cast<int64_t>(ids.size());
    generated_once_ = true;
    attention_sample_ = {};
    Q_EMIT generation_started(*user_request_, static_cast<int>(request.prompt_ids.size()));
    for (const serving::SequenceId sample : user_samples_) Q_EMIT sample_started(sample);
  } catch (const std::exception& error) {
    Q_EMIT generation_refused(QString("Cannot generate: %1").arg(error.what()));
    return;
  }
  top_up_classmates();
  update_timer();
}

void EngineWorker::stop() {
  if (!user_request_) return;
  cancel_all();
  user_request_.reset();
  user_samples_.clear();
  Q_EMIT generation_finished(GenerationEnd::kStopped);
  update_timer();
}

void EngineWorker::cancel_all() {
  // The user's request and every classmate end now; their blocks are freed at once.
  for (const serving::SequenceId id : std::set<serving::SequenceId>(live_requests_)) {
    engine_->cancel(id);
  }
  retire_finished_requests();
}

void EngineWorker::cancel_classmates() {
  for (const serving::SequenceId id : std::set<serving::SequenceId>(classmate_requests_)) {
    engine_->cancel(id);
  }
  retire_finished_requests();
}

void EngineWorker::set_attention_head(int layer, int head) {
  attention_layer_ = layer;
  attention_head_ = head;
  attention_sample_ = {};
  capture_user_attention();
}

void EngineWorker::capture_user_attention() {
  if (!model_ || own_load_) return;  // a measured load runs without it; it ends by calling here
  try {
    model_->transformer->set_attention_capture(
        model::AttentionCapture{attention_layer_, attention_head_});
  } catch (const std::exception& error) {
    Q_EMIT failed(QString("Attention: %1").arg(error.what()));
  }
}

void EngineWorker::step_once() {
  if (!engine_ || !engine_->has_unfinished() || own_load_) return;
  run_one_step();
  update_timer();
}

void EngineWorker::tick() {
  if (!engine_ || !engine_->has_unfinished() || own_load_) {
    update_timer();
    return;
  }
  run_one_step();
  update_timer();
}

bool EngineWorker::run_one_step() {
  try {
    if (!engine_->step()) return false;  // a static batch is still collecting
    if (engine_->steps_run() == 1) report_memory();
    capture_attention();
    check_user_request();
    retire_finished_requests();
    top_up_classmates();
  } catch (const std::exception& error) {
    recover_from_step_failure(error);
    return false;
  }
  return true;
}

void EngineWorker::recover_from_step_failure(const std::exception& error) {
  const bool was_generating = user_request_.has_value();
  const QString reason = QString::fromStdString(error.what());
  drop_engine();
  if (was_generating) Q_EMIT generation_finished(GenerationEnd::kFailed);
  if (backend_.kind == compute::BackendKind::kVulkan) {
    // The engine cannot continue after a backend failure; rebuild the model on the CPU.
    model_.reset();
    load_model(model_path_, BackendChoice(compute::BackendKind::kCpu));
    Q_EMIT notice(QString("The Vulkan device failed (%1). ServeScope now runs on the CPU backend; "
                          "choose Vulkan again in the toolbar to retry.")
                      .arg(reason));
  } else {
    rebuild_engine();
    Q_EMIT failed(QString("A step failed: %1. The engine was rebuilt.").arg(reason));
  }
}

void EngineWorker::check_user_request() {
  if (!user_request_ || !engine_->is_finished(*user_request_)) return;
  std::erase_if(user_samples_, [&](serving::SequenceId id) { return engine_->is_finished(id); });
  if (!user_samples_.empty()) return;  // the generation ends with its last sample
  const serving::Sequence& sequence = engine_->sequence(*user_request_);
  user_request_.reset();
  Q_EMIT generation_finished(generation_end_of(sequence.finish_reason));
}

void EngineWorker::capture_attention() {
  if (!user_request_) return;
  const std::vector<model::AttentionWeights>& captured = model_->transformer->captured_attention();
  if (captured.empty()) return;
  // The pass's query rows are its batch's tokens, entry after entry.
  size_t row = 0;
  for (const telemetry::BatchEntry& entry : tap_.last_batch()) {
    if (entry.sequence != *user_request_) {
      row += entry.tokens.size();
      continue;
    }
    const model::AttentionWeights& weights = captured.front();
    AttentionSample& sample = attention_sample_;
    for (size_t i = 0; i < entry.tokens.size() && row + i < weights.rows.size(); ++i) {
      const int64_t position = weights.positions[row + i];
      const bool continues =
          !sample.rows.empty() &&
          position == sample.first_query_position + static_cast<int64_t>(sample.rows.size());
      if (!continues) {  // the first rows, or a recompute after a preemption
        sample.rows.clear();
        sample.first_query_position = position;
      }
      sample.rows.push_back(weights.rows[row + i]);
    }
    sample.layer = weights.layer;
    sample.head = weights.head;
    sample.request = entry.sequence;
    const std::vector<int32_t>& tokens = engine_->sequence(entry.sequence).tokens;
    const auto keys = static_cast<size_t>(sample.first_query_position) + sample.rows.size();
    sample.key_ids.assign(tokens.begin(), tokens.begin() + std::min(keys, tokens.size()));
    attention_->put(sample);
    return;
  }
}

void EngineWorker::retire_finished_requests() {
  for (auto it = live_requests_.begin(); it != live_requests_.end();) {
    if (engine_->is_finished(*it)) {
      classmate_requests_.erase(*it);
      ++requests_finished_;
      it = live_requests_.erase(it);
    } else {
      ++it;
    }
  }
}

void EngineWorker::top_up_classmates() {
  // Classmates come while the user generates (or always, for the demo once it started).
  if (!engine_ || !(user_request_ || (continuous_classmates_ && generated_once_))) return;
  while (static_cast<int>(classmate_requests_.size()) < classmates_) submit_classmate();
}

void EngineWorker::submit_classmate() {
  if (classmate_queue_.empty()) {
    serving::WorkloadSpec spec;
    spec.clients = app::kMaxClassmates;
    spec.prompt_tokens = {8, 40};
    spec.output_tokens = {24, 96};
    spec.seed = classmate_seed_++;
    spec.text_ids = classmate_text_ids_;
    spec.vocab_size = static_cast<int32_t>(model_->config.vocab_size);
    for (serving::SimulatedRequest& r : serving::make_workload(spec)) {
      classmate_queue_.push_back(std::move(r));
    }
  }
  serving::SimulatedRequest next = std::move(classmate_queue_.front());
  classmate_queue_.pop_front();
  serving::EngineRequest request;
  next.prompt_ids.insert(next.prompt_ids.begin(), tokenizer_->vocabulary().bos_id);
  request.prompt_ids = std::move(next.prompt_ids);
  request.max_tokens = next.max_tokens;
  request.sampling.greedy = false;
  request.sampling.temperature = 0.8f;
  request.sampling.seed = classmate_seed_ * 7919 + classmate_queue_.size();
  const serving::SequenceId id = engine_->submit(request);
  classmate_requests_.insert(id);
  live_requests_.insert(id);
  ++requests_submitted_;
}

void EngineWorker::update_timer() {
  const bool work = engine_ && engine_->has_unfinished();
  set_running(work);
  if (own_load_) {
    // A measured load has the transformer: the live engine waits, its clock stopped, so a
    // request sent meanwhile does not count the load's time as its own.
    if (work) engine_->hold_clock();
    tick_timer_->stop();
    return;
  }
  if (wait_for_batch()) return;  // a batch's wait is serving time: the clock runs
  // Slow motion's and single step's wait for the next step is for the eye, not serving: the
  // engine's clock stands still through it (the next step() resumes it), so the records'
  // TTFT and TPOT are the same work's at full speed.
  if (work && speed_ != Speed::kRealTime) engine_->hold_clock();
  if (!work || speed_ == Speed::kSingleStep) {
    tick_timer_->stop();
    return;
  }
  const int interval = speed_ == Speed::kSlowMotion ? kSlowMotionMs : 0;
  if (!tick_timer_->isActive() || tick_timer_->interval() != interval) {
    tick_timer_->start(interval);
  }
}

bool EngineWorker::wait_for_batch() {
  const std::optional<double> due = engine_ ? engine_->batch_due_ms() : std::nullopt;
  if (!due || !engine_->waiting_for_batch()) {
    if (collecting_) {
      collecting_ = false;
      Q_EMIT batch_collecting({});
    }
    return false;
  }
  // One tick when the batch falls due (at least 1 ms ahead, so an early wake-up re-arms
  // instead of spinning); a newcomer that fills the batch re-arms through update_timer().
  // The wait is serving time: a clock held since the last step runs again.
  engine_->resume_clock();
  const double due_in_ms = *due - engine_->now_ms();
  const int delay = std::max(1, static_cast<int>(std::ceil(due_in_ms)));
  if (speed_ == Speed::kSingleStep) {
    tick_timer_->stop();  // Step runs the batch once it is due
  } else {
    tick_timer_->setTimerType(Qt::PreciseTimer);
    tick_timer_->start(delay);
  }
  collecting_ = true;
  const auto& config = engine_->scheduler().config();
  Q_EMIT batch_collecting({static_cast<int>(engine_->scheduler().waiting().size()),
                           static_cast<int>(config.max_batch_size), std::max(0.0, due_in_ms)});
  return true;
}

void EngineWorker::report_memory() {
  if (const auto* cpu = dynamic_cast<const compute::CpuBackend*>(model_->backend.get())) {
    // Only working memory is counted apart: the weights and the pool are the model's and the
    // engine's sizes, which the window has (0 here leaves them to it).
    Q_EMIT memory_measured(0, 0, cpu->working_bytes());
    return;
  }
  const auto* vk = dynamic_cast<const compute::vulkan::VulkanBackend*>(model_->backend.get());
  if (vk == nullptr) return;
  const auto memory = vk->memory_usage().bytes_in_use;
  using compute::BufferPurpose;
  Q_EMIT memory_measured(memory[static_cast<size_t>(BufferPurpose::kWeights)],
                         memory[static_cast<size_t>(BufferPurpose::kKvCache)],
                         memory[static_cast<size_t>(BufferPurpose::kActivations)] +
                             memory[static_cast<size_t>(BufferPurpose::kScratch)]);
}

EngineCounters EngineWorker::counters() const {
  const serving::KvUsage usage = engine_->kv_usage();
  return EngineCounters{engine_->steps_run(), requests_submitted_, requests_finished_,
                        usage.blocks_used,    usage.blocks_total,  engine_->kv_snapshot()};
}

void EngineWorker::set_running(bool running) {
  if (running == running_) return;
  running_ = running;
  Q_EMIT running_changed(running);
  if (!running && engine_) {
    keep_raised_roofs();
    report_memory();
    Q_EMIT idle(counters());
  }
}

}  // namespace servescope::gui
