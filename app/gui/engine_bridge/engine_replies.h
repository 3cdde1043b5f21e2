// What the engine thread says: the replies EngineWorker sends and EngineClient passes on to
// the window (a recorded run played back says the same through the client). One declaration
// for both, so the worker, the client and the player cannot drift apart.
#pragma once

#include <QObject>
#include <QString>
#include <QVector>

#include "app/gui/engine_bridge/engine_types.h"
#include "app/gui/engine_bridge/generation_end.h"
#include "app/gui/engine_bridge/quant_lab.h"

namespace servescope::gui {

class EngineReplies : public QObject {
  Q_OBJECT

 public:
  using QObject::QObject;

 Q_SIGNALS:
  // Each command that can fail ends in exactly one reply that settles what the window set for
  // it: a load (load_model, open_timing_model, set_weight_type, a rebuild) in engine_ready or
  // load_failed; generate in generation_started (then generation_finished) or
  // generation_refused; a sweep in batch_sweep_ready; a lab in quant_lab_progress(false).
  void engine_ready(servescope::gui::EngineInfo info);
  // No new engine: `serving` says whether the engine of the last engine_ready still serves
  // (false: nothing is loaded now).
  void load_failed(const QString& message, bool serving);
  void generation_refused(const QString& message);
  // A problem that changed no state the window holds (sampling, batching, a step that failed).
  void failed(const QString& message);
  void notice(const QString& message);
  // The typed prompt's prefill (ahead of Generate, for the prefix cache) was submitted.
  void prompt_prefill_started(qint64 request);
  void generation_started(qint64 request, int prompt_tokens);
  // Another sample of the user's prompt (Sampling > Samples above 1): it shares the prompt's KV
  // blocks and continues it on its own. After generation_started, one per further sample.
  void sample_started(qint64 request);
  void generation_finished(servescope::gui::GenerationEnd end);
  void running_changed(bool running);
  void idle(servescope::gui::EngineCounters counters);
  void quant_lab_ready(servescope::gui::QuantLabReport report);
  // The comparison's stage and share done; running false when it ended, with `outcome`
  // "cancelled", a problem, or empty when it finished.
  void quant_lab_progress(bool running, const QString& stage, double fraction,
                          const QString& outcome);
  void weight_progress(int done, int total, const QString& type);
  // What a load (or a rebuild) does now that can take seconds on a first run: "measuring the
  // device's roofs", "warming up the kernels".
  void load_stage(const QString& stage);
  // Bytes of a timing model written so far, of about `total`; written == total when done.
  void timing_model_progress(quint64 written, quint64 total, const QString& path);
  // Device memory by purpose (Vulkan), after the engine's first steps and when it falls idle:
  // working buffers are allocated as steps need them.
  void memory_measured(quint64 weights, quint64 kv_cache, quint64 working);
  void batch_sweep_point(servescope::gui::BatchSweepPoint point);
  void batch_sweep_ready(QVector<servescope::gui::BatchSweepPoint> points);
  void staggered_load_progress(qint64 finished, qint64 total);
  void staggered_load_ready(servescope::gui::StaggeredLoadResult result);
  // The engine's batching policy after set_batching() (read back from its scheduler).
  void batching_changed(servescope::gui::BatchingChoice choice);
  // Static batching: a batch is collecting (waiting > 0) or no longer is (waiting == 0). Sent
  // when the worker arms its timer for the batch's due time, and once when collecting ends.
  void batch_collecting(servescope::gui::BatchCollecting state);
};

// Each signal of `from` re-emitted by `to` (queued when they live on different threads).
template <typename... Signal>
void relay(EngineReplies* from, EngineReplies* to, Signal... signal) {
  (QObject::connect(from, signal, to, signal), ...);
}

}  // namespace servescope::gui
