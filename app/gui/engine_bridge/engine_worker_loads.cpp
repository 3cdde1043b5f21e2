// The engine worker's measured loads on engines of their own (the live engine waits): the
// batch sweep and a staggered load. Each advances one engine step per event-loop turn, so the
// thread answers commands between steps; a load ends at its CancelToken, a new engine or
// shutdown. Not a background thread: the load and the live engine share the model's
// transformer, which runs one forward pass at a time.
#include <QTimer>
#include <algorithm>
#include <cmath>
#include <string>

#include "app/gui/engine_bridge/engine_worker.h"
#include "app/gui/engine_bridge/worker_engines.h"
#include "app/gui/window/window_text.h"

namespace servescope::gui {

void EngineWorker::run_batch_sweep(CancelToken cancel) {
  if (!model_) {
    Q_EMIT batch_sweep_ready({});  // the window is waiting for an answer
    return;
  }
  run_next_sweep_size(std::make_shared<BatchSweepPlan>(), std::move(cancel));
}

void EngineWorker::run_next_sweep_size(std::shared_ptr<BatchSweepPlan> plan, CancelToken cancel) {
  const std::optional<int64_t> batch = plan->next_batch();
  if (!batch || !model_) {
    Q_EMIT batch_sweep_ready(plan->points());
    return;
  }
  serving::EngineConfig config;
  config.max_batch_size = *batch;
  OwnLoad load;
  load.name = QStringLiteral("Batch sweep");
  load.needs = QStringLiteral("for the sweep's engines");
  load.cancel = cancel;
  load.on_end = [this, plan, cancel](const serving::LoadResult& run, bool stopped) {
    if (stopped) {  // the size interrupted is dropped; those measured stand
      Q_EMIT batch_sweep_ready(plan->points());
      return;
    }
    if (const auto point = plan->record(telemetry::decode_step_totals(run.steps))) {
      Q_EMIT batch_sweep_point(*point);
    }
    run_next_sweep_size(plan, cancel);
  };
  start_own_load(std::move(load), config, batch_sweep_workload(*batch, {}, 0));
}

void EngineWorker::run_staggered_load(StaggeredLoad load, CancelToken cancel) {
  if (!model_) {
    Q_EMIT staggered_load_ready({load, kMaxBatch, {}});  // the window is waiting for an answer
    return;
  }
  serving::EngineConfig config;
  config.max_batch_size = kMaxBatch;  // the window's engine's slots
  config.batching = policy_of(load.batching);
  config.batch_wait_ms = load.batching.static_batches ? load.batching.wait_ms : 0;
  // Short prompts and long answers, as `servescope-cli bench --prompt-tokens 16
  // --output-tokens 100`: decode steps dominate, so a batch's size is what sets its pace.
  serving::WorkloadSpec spec;
  spec.clients = load.clients;
  spec.rate_per_s = load.rate_per_s;
  spec.prompt_tokens = {16, 16};
  spec.output_tokens = {100, 100};
  spec.seed = 7;
  OwnLoad run;
  run.name = QStringLiteral("Staggered load");
  run.needs = QStringLiteral("for its engine");
  run.cancel = std::move(cancel);
  run.progress = [this, reported = int64_t{-1}](int64_t finished, int64_t total) mutable {
    if (finished == std::exchange(reported, finished)) return;  // once per finished request
    Q_EMIT staggered_load_progress(finished, total);
  };
  run.on_end = [this, load](const serving::LoadResult& result, bool /*stopped*/) {
    Q_EMIT staggered_load_ready({load, kMaxBatch, result.summary});
  };
  start_own_load(std::move(run), config, spec);
}

void EngineWorker::start_own_load(OwnLoad load, serving::EngineConfig config,
                                  serving::WorkloadSpec spec) {
  if (!model_) return load.on_end({}, true);
  if (own_load_) {  // one at a time (the client sends none while one runs)
    Q_EMIT failed(QString("%1: %2 is still running").arg(load.name, own_load_->name));
    return load.on_end({}, true);
  }
  config.kv_type = kv_type_;
  spec.text_ids = classmate_text_ids_;
  spec.vocab_size = static_cast<int32_t>(model_->config.vocab_size);
  model_->transformer->set_attention_capture(std::nullopt);  // measure serving alone
  try {
    load.run = std::make_unique<serving::LoadRun>(*model_->transformer, weight_bytes_, config,
                                                  serving::make_workload(spec));
  } catch (const std::exception& error) {
    Q_EMIT failed(QString("%1: %2").arg(load.name, failure_text(error, load.needs)));
    capture_user_attention();
    return load.on_end({}, true);
  }
  own_load_ = std::move(load);
  update_timer();  // the live engine waits
  own_load_timer_->start(0);
}

void EngineWorker::advance_own_load() {
  if (!own_load_) return;
  if (own_load_->cancel.cancelled()) return end_own_load(true);
  serving::LoadRun::Turn turn;
  try {
    turn = own_load_->run->advance();
  } catch (const std::exception& error) {
    Q_EMIT failed(QString("%1: %2").arg(own_load_->name, failure_text(error, own_load_->needs)));
    return end_own_load(true);
  }
  if (turn.done) return end_own_load(false);
  if (turn.stepped && own_load_->progress) {
    own_load_->progress(own_load_->run->finished(), own_load_->run->total());
  }
  // Waiting for an arrival or a collecting batch: in slices of at most 100 ms, so that a
  // cancel is answered meanwhile.
  own_load_timer_->start(
      turn.stepped ? 0 : std::clamp(static_cast<int>(std::ceil(turn.wait_ms)), 1, 100));
}

void EngineWorker::end_own_load(bool stopped) {
  if (!own_load_) return;
  own_load_timer_->stop();
  OwnLoad load = std::move(*own_load_);
  own_load_.reset();
  const serving::LoadResult result = load.run->take_result();
  load.run.reset();  // its engine's memory is free before anything else starts
  capture_user_attention();
  load.on_end(result, stopped);    // may start the next run (the sweep's next size)
  if (!own_load_) update_timer();  // the live engine goes on
}

}  // namespace servescope::gui
