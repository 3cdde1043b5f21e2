// The engine worker's measured loads on engines of their own (the live engine waits): the
// batch sweep and a staggered load, each stopped by its CancelToken between engine steps.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "app/cli/commands.h"
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

void EngineWorker::run_batch_sweep(CancelToken cancel) {
  if (!model_) {
    Q_EMIT batch_sweep_ready({});  // the window is waiting for an answer
    return;
  }
  QVector<BatchSweepPoint> points;
  try {
    // Untimed first: the first run after loading pays for cold caches and page faults, which
    // made batch 1 look slower than batch 4.
    bool stopped = !run_sweep_size(1, cancel);
    // runs[size]: each repeat's decode totals. Passes alternate up and down so a slow spell
    // of a shared machine does not land on the large sizes only.
    std::vector<std::vector<telemetry::StepTotals>> runs(kBatchSweepSizes);
    for (int pass = 0; pass < kBatchSweepRepeats && !stopped; ++pass) {
      for (int i = 0; i < kBatchSweepSizes && !stopped; ++i) {
        const int size = pass % 2 == 0 ? i : kBatchSweepSizes - 1 - i;
        const int64_t batch = int64_t{1} << size;
        const std::optional<telemetry::StepTotals> totals = run_sweep_size(batch, cancel);
        stopped = !totals;  // the size interrupted is dropped; those measured stand
        if (stopped) break;
        runs[static_cast<size_t>(size)].push_back(*totals);
        if (pass + 1 < kBatchSweepRepeats) continue;
        points.push_back(*median_sweep_point(batch, runs[static_cast<size_t>(size)]));
        Q_EMIT batch_sweep_point(points.back());
      }
    }
  } catch (const std::exception& error) {
    Q_EMIT failed(QString("Batch sweep: %1").arg(failure_text(error, "for the sweep's engines")));
  }
  Q_EMIT batch_sweep_ready(points);
}

void EngineWorker::run_staggered_load(StaggeredLoad load, CancelToken cancel) {
  StaggeredLoadResult result{load, kMaxBatch, {}};
  if (!model_) {
    Q_EMIT staggered_load_ready(result);  // the window is waiting for an answer
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
  int64_t reported = -1;
  const serving::LoadProgress progress = [this, &reported](int64_t finished, int64_t total) {
    if (finished == std::exchange(reported, finished)) return;  // once per finished request
    Q_EMIT staggered_load_progress(finished, total);
  };
  try {
    result.summary =
        run_own_load(config, spec, progress, [&cancel] { return cancel.cancelled(); }).summary;
  } catch (const std::exception& error) {
    Q_EMIT failed(QString("Staggered load: %1").arg(failure_text(error, "for its engine")));
  }
  Q_EMIT staggered_load_ready(result);
}

serving::LoadResult EngineWorker::run_own_load(serving::EngineConfig config,
                                               serving::WorkloadSpec spec,
                                               const serving::LoadProgress& progress,
                                               const std::function<bool()>& should_stop) {
  config.kv_type = kv_type_;
  spec.text_ids = classmate_text_ids_;
  spec.vocab_size = static_cast<int32_t>(model_->config.vocab_size);
  model_->transformer->set_attention_capture(std::nullopt);  // measure serving alone
  struct CaptureAgain {  // however the run ends, the user's request is captured again
    EngineWorker* worker;
    ~CaptureAgain() { worker->capture_user_attention(); }
  } capture_again{this};
  return serving::run_load(*model_->transformer, weight_bytes_, config,
                           serving::make_workload(spec), progress, should_stop);
}

std::optional<telemetry::StepTotals> EngineWorker::run_sweep_size(int64_t batch,
                                                                  const CancelToken& cancel) {
  serving::EngineConfig config;
  config.max_batch_size = batch;
  const serving::WorkloadSpec spec = batch_sweep_workload(
      batch, classmate_text_ids_, static_cast<int32_t>(model_->config.vocab_size));
  const serving::LoadResult run =
      run_own_load(config, spec, {}, [&cancel] { return cancel.cancelled(); });
  if (cancel.cancelled()) return std::nullopt;  // a run cut short measures nothing
  return telemetry::decode_step_totals(run.steps);
}

}  // namespace servescope::gui
