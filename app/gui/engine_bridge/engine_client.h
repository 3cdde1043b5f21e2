// The window's only way to the engine thread. EngineClient starts the thread and its
// EngineWorker, sends each command as one typed, queued call, and keeps the one copy of the
// engine's state the window reads (EngineState): what the last replies said, with a revision
// per part so a reader knows what changed without flags of its own. Long work (a batch sweep,
// a staggered load, the quantisation lab) starts with a CancelToken that stop_sweep() /
// cancel_quant_lab() and the destructor cancel, so quitting never waits for it.
//
// The state follows the client's own reply signals, whoever sends them: the worker (queued
// across threads) or a recorded run played back (ReplayPlayer, direct).
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <QThread>
#include <QVector>
#include <memory>
#include <optional>

#include "app/gui/engine_bridge/cancel_token.h"
#include "app/gui/engine_bridge/engine_replies.h"
#include "app/gui/engine_bridge/engine_types.h"
#include "app/gui/engine_bridge/quant_lab.h"
#include "app/gui/engine_bridge/timing_models.h"
#include "engine/serving/sampler.h"

namespace servescope::gui {

class EngineWorker;

// What the engine thread last said, as one value. Revisions count changes: `info_revision`
// the engine's facts (a new engine, its memory measured, its batching), `sweep_revision` the
// batch sweep's points and the staggered load's result. `info` is the engine as it was made
// and is replaced whole, never patched: what changes while it serves has fields of its own.
struct EngineState {
  std::optional<EngineInfo> info;  // the engine serving now; none before a load succeeded
  MeasuredMemory memory;           // its device memory as last measured
  BatchingChoice batching;         // the batching its scheduler holds now
  bool loading = false;            // a model asked for and not yet answered
  QString loading_path;
  bool generating = false;     // the user's generation, from generate() to its end
  qint64 user_request = -1;    // the user's request in the engine (-1 before one is named)
  QVector<qint64> user_samples;  // the further samples of its prompt (Samples above 1)
  bool running = false;        // the engine has requests to step
  bool sweeping = false;       // a batch sweep or a staggered load runs on its own engine
  BatchCollecting collecting;  // the static batch collecting now (waiting 0: none)
  QVector<BatchSweepPoint> batch_sweep;  // empty before a sweep, or after a new engine
  std::optional<StaggeredLoadResult> staggered_load;
  uint64_t info_revision = 0;
  uint64_t sweep_revision = 0;
  uint64_t collecting_revision = 0;
};

class EngineClient : public EngineReplies {
  Q_OBJECT

 public:
  explicit EngineClient(QObject* parent = nullptr);
  // Cancels long work, frees the engine on its own thread, then ends the thread.
  ~EngineClient() override;

  // Updated from the replies (EngineReplies' signals) before any other receiver hears one.
  const EngineState& state() const { return state_; }

  // --- commands: each is queued to the engine thread and answered by EngineReplies' signals ---
  void load_model(const QString& path, const BackendChoice& backend);
  // A random-weight timing model kept at `path`, written there first when missing.
  void open_timing_model(const TimingModel& model, const QString& path,
                         const BackendChoice& backend);
  void set_kv_type(gguf::GgmlType type);
  void set_keep_kv(bool keep);
  void set_kv_budget_mib(int mib);
  void set_batching(const BatchingChoice& batching);
  void set_weight_type(const QString& type);
  void set_classmates(int count);
  void set_speed(Speed speed);
  void set_sampling(const serving::SamplingParams& sampling);
  void set_samples(int samples);
  void set_max_tokens(int count);
  void set_continuous_classmates(bool continuous);
  void set_attention_head(int layer, int head);
  void prefill(const QString& prompt);
  void forget_cached_prefixes();
  void generate(const QString& prompt);
  void stop();
  void step_once();
  // Long work on an engine of its own; the live engine waits. Ignored while one runs.
  void run_batch_sweep();
  void run_staggered_load(const StaggeredLoad& load);
  // Ends the sweep or the staggered load after the engine step in progress.
  void stop_sweep();
  void start_quant_lab(const QString& prompt, const QStringList& types);
  void cancel_quant_lab();
  // Test hook (EngineWorker::simulate_device_loss_after).
  void simulate_device_loss_after(int steps);

 private:
  void forward_replies();
  void mirror_replies();
  // Runs `call` on the engine thread, in the order the commands were sent.
  template <typename Call>
  void send(Call call);

  EngineState state_;
  std::unique_ptr<QThread> thread_;
  EngineWorker* worker_ = nullptr;  // lives on thread_, deleted when it finishes
  CancelToken sweep_token_;
  CancelToken lab_token_;
};

}  // namespace servescope::gui
