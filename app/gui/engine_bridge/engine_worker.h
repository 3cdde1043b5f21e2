// The engine's thread: EngineWorker owns the backend, the model, the serving Engine and the
// simulated classmates, and is moved to its own QThread. Every engine call happens on that
// thread; the GUI sends commands through queued signals and hears back through signals and
// the engine's TelemetryQueue. While there is work it runs one engine step per event-loop
// turn (or one per slow-motion tick), so commands are handled between steps and nothing
// the GUI does ever waits for a step.
#pragma once

#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <QThreadPool>
#include <QVector>
#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "app/gui/engine_bridge/cancel_token.h"
#include "app/gui/engine_bridge/engine_replies.h"
#include "app/gui/engine_bridge/engine_types.h"
#include "app/gui/engine_bridge/measured_roofs.h"
#include "app/gui/engine_bridge/quant_lab.h"
#include "app/gui/engine_bridge/timing_models.h"
#include "engine/compute/roofs.h"
#include "engine/model/model.h"
#include "engine/serving/engine.h"
#include "engine/serving/load_generator.h"

class QTimer;

namespace servescope::gui {

// The engine's observer: every record goes to the TelemetryQueue for the GUI, and the worker
// keeps the last step's batch (to find its own request's rows in an attention capture) and the
// roofs raised by the steps that beat them (for the probe's cache).
class StepTap final : public telemetry::Observer {
 public:
  void set_queue(telemetry::TelemetryQueue* queue) { queue_ = queue; }
  const std::vector<telemetry::BatchEntry>& last_batch() const { return last_batch_; }
  void set_roofs(const compute::StepRoofs& roofs) {
    roofs_ = roofs;
    raised_ = false;
  }
  const compute::StepRoofs& roofs() const { return roofs_; }
  // Whether a step raised a roof since the last call.
  bool take_raised() { return std::exchange(raised_, false); }

  void on_step(const telemetry::StepRecord& step) override {
    last_batch_ = step.batch;
    if (compute::raise_roofs_to_step(roofs_, measured_step(step))) raised_ = true;
    queue_->on_step(step);
  }
  void on_request(const telemetry::RequestRecord& request) override { queue_->on_request(request); }
  void on_kv_event(const telemetry::KvEvent& event) override { queue_->on_kv_event(event); }
  void on_token(const telemetry::TokenRecord& token) override { queue_->on_token(token); }
  void on_arrival(const telemetry::RequestArrival& arrival) override {
    queue_->on_arrival(arrival);
  }

 private:
  telemetry::TelemetryQueue* queue_ = nullptr;
  std::vector<telemetry::BatchEntry> last_batch_;
  compute::StepRoofs roofs_;
  bool raised_ = false;
};

class EngineWorker : public EngineReplies {
  Q_OBJECT

 public:
  static constexpr int kSlowMotionMs = 400;

  explicit EngineWorker(QObject* parent = nullptr);
  ~EngineWorker() override;

  // Registers the types of the queued signals; call once before connecting.
  static void register_types();

 public Q_SLOTS:
  // Loads a model on a backend and builds a fresh engine. On failure the previous model and
  // engine stay as they were and failed() says why.
  void load_model(const QString& path, servescope::gui::BackendChoice backend);
  // Loads the random-weight timing model kept at `path`, first writing it there (on a thread
  // of its own, with progress) when the file does not exist yet; the model in use keeps
  // serving meanwhile, and keeps serving when the write fails (failed() says why).
  void open_timing_model(const servescope::gui::TimingModel& model, const QString& path,
                         servescope::gui::BackendChoice backend);
  void set_kv_type(servescope::gguf::GgmlType type);
  // false: the engine is rebuilt to serve without a KV cache, recomputing each token's whole
  // context (the lessons' foil); true: with it again.
  void set_keep_kv(bool keep);
  // The KV cache's memory budget in MiB (0: automatic, kKvBlocks blocks at most the engine's
  // default budget); the engine is rebuilt with a pool of what it buys.
  void set_kv_budget_mib(int mib);
  // Continuous or static batching from the next batch on (a running static batch still runs
  // to its end); batching_changed() reports what the engine now holds.
  void set_batching(servescope::gui::BatchingChoice choice);
  // Re-encodes the loaded model's weights ("f16", "q8_0", "q4_0"; "" for the file as loaded)
  // on a thread of its own with progress; the model in use keeps serving until the new one is
  // ready, then the engine is rebuilt on it.
  void set_weight_type(const QString& type);
  void set_classmates(int count);
  void set_speed(servescope::gui::Speed speed);
  void set_sampling(servescope::serving::SamplingParams sampling);
  // Samples of the prompt each Generate runs (1 to kMaxSamples): sample i samples with seed
  // + i, all share the prompt's KV blocks; the generation ends when the last one does.
  void set_samples(int samples);
  void set_max_tokens(int max_tokens);
  // true: classmates keep coming after the user's generation ends (the scripted demo's load).
  void set_continuous_classmates(bool continuous);
  // Prefills the prompt (one short request) so its full blocks enter the prefix cache and a
  // later generate() reuses them. Ignored while a generation runs.
  void prefill(const QString& prompt);
  // Forgets the prompt prefixes cached in free KV blocks: the next generate prefills its whole
  // prompt (a lesson timing a full prefill of a prompt it ran before).
  void forget_cached_prefixes();
  void generate(const QString& prompt);
  void stop();
  void step_once();
  // The layer and head whose attention weights the user's request reports.
  void set_attention_head(int layer, int head);
  // Measures throughput and decode-step time at max batch 1, 2, 4, 8 and 16 (twice as many
  // simulated clients as slots, each on a fresh engine); the live engine waits meanwhile.
  // batch_sweep_point reports each size as it is measured, batch_sweep_ready all of them.
  // It returns at once: the runs go one engine step per event-loop turn. `cancel` stops it
  // after the engine step in progress, as a new engine (model, weights, KV type) or shutdown
  // does: batch_sweep_ready then brings the sizes measured so far.
  void run_batch_sweep(servescope::gui::CancelToken cancel = {});
  // Runs a staggered load (simulated clients arriving spread out, engine_types.h) on an engine
  // of its own, as the sweep does; staggered_load_progress follows it and staggered_load_ready
  // brings its summary (of what finished, when `cancel` ended it early).
  void run_staggered_load(servescope::gui::StaggeredLoad load,
                          servescope::gui::CancelToken cancel = {});
  // Runs the quantisation lab for the loaded model on a thread of its own, comparing these
  // weight types with F32 (a lab still running is cancelled first). quant_lab_ready brings
  // the quick parts, then the whole report; quant_lab_progress follows the comparison, and
  // says "cancelled" when `cancel` stopped it.
  void start_quant_lab(const QString& prompt, const QStringList& types,
                       servescope::gui::CancelToken cancel = {});
  // Test hook: on a Vulkan backend, the step submitted after `steps` more reports the device
  // lost (VK_ERROR_DEVICE_LOST), as a GPU reset or a driver crash would.
  void simulate_device_loss_after(int steps);
  // Frees the engine on this thread; call (blocking-queued) before the thread ends.
  void shutdown();

 private:
  bool event(QEvent* event) override;
  void rebuild_engine();
  void capture_user_attention();
  void refuse_load(const QString& message);
  EngineInfo engine_info() const;
  // The type most of the model's matrices are stored in, when the probe measures it: its
  // compute roof is the model's.
  std::optional<gguf::GgmlType> main_weight_type() const;
  // Roofs raised by this engine's steps go into roofs_ and the probe's cache.
  void keep_raised_roofs();
  std::vector<int32_t> tokenize(const QString& prompt) const;
  void tick();
  bool run_one_step();
  void recover_from_step_failure(const std::exception& error);
  void check_user_request();
  void capture_attention();
  void cancel_all();
  void cancel_classmates();
  void retire_finished_requests();
  void top_up_classmates();
  void submit_classmate();
  void update_timer();
  // Measured loads on engines of their own (engine_worker_loads.cpp), one at a time, one engine
  // step per event-loop turn so commands are answered between steps; the live engine waits.
  struct OwnLoad {
    QString name;   // a failure's message starts with it: "Batch sweep"
    QString needs;  // what memory it wanted, in a failure's text: "for the sweep's engines"
    CancelToken cancel;
    serving::LoadProgress progress;  // after each step; may be empty
    // How it ended: all run (stopped false), or cut short by its token, a new engine or a
    // failure; `result` covers what finished.
    std::function<void(const serving::LoadResult& result, bool stopped)> on_end;
    std::unique_ptr<serving::LoadRun> run;
  };
  // Starts `load` with the window's KV type, the classmates' prompts and the model's serving
  // alone (no attention capture meanwhile); refused (ended at once) while another runs.
  void start_own_load(OwnLoad load, serving::EngineConfig config, serving::WorkloadSpec spec);
  void advance_own_load();
  void end_own_load(bool stopped);
  // The sweep's next size (or its end) after the runs `plan` holds.
  void run_next_sweep_size(std::shared_ptr<BatchSweepPlan> plan, CancelToken cancel);
  // While a static batch collects: sleeps until it is due (a timer, never a busy loop) and
  // says so. Returns false when no batch is collecting.
  bool wait_for_batch();
  BatchingChoice engine_batching() const;
  void set_running(bool running);
  EngineCounters counters() const;
  void report_memory();
  void drop_engine();
  uint64_t kv_budget_bytes() const;  // what set_kv_budget_mib chose, for the loaded model
  void report_timing_progress();

  QTimer* tick_timer_;
  std::optional<OwnLoad> own_load_;
  QTimer* own_load_timer_;
  QString model_path_;
  BackendChoice backend_;
  gguf::GgmlType kv_type_ = gguf::GgmlType::F16;
  bool keep_kv_ = true;
  int kv_budget_mib_ = 0;  // 0: automatic
  BatchingChoice batching_;
  bool collecting_ = false;  // the last batch_collecting() said a batch was collecting
  serving::SamplingParams sampling_;
  int samples_ = 1;
  int max_tokens_ = kDefaultMaxTokens;
  int classmates_ = 0;
  bool continuous_classmates_ = false;
  bool generated_once_ = false;
  Speed speed_ = Speed::kRealTime;

  // Destroyed in reverse: the engine before the queue it reports to and the model it runs.
  std::unique_ptr<model::Model> model_;
  uint64_t weight_bytes_ = 0;
  double warm_up_ms_ = 0.0;  // the last engine's untimed kernel warm-up
  compute::Roofs roofs_;     // as probed, raised by the steps of earlier engines
  std::shared_ptr<const Tokenizer> tokenizer_;
  std::shared_ptr<telemetry::TelemetryQueue> queue_;
  std::shared_ptr<AttentionMailbox> attention_;
  StepTap tap_;
  std::unique_ptr<serving::Engine> engine_;

  std::optional<serving::SequenceId> user_request_;
  std::set<serving::SequenceId> user_samples_;  // its further samples, until they finish
  int64_t attention_layer_ = 0;
  int64_t attention_head_ = 0;
  AttentionSample attention_sample_;             // the user's request's rows so far
  std::set<serving::SequenceId> live_requests_;  // submitted and not yet seen finished
  std::set<serving::SequenceId> classmate_requests_;
  std::deque<serving::SimulatedRequest> classmate_queue_;
  uint64_t classmate_seed_ = 1;
  std::string stories_;  // the evaluation text: classmates' prompts, the quantisation lab
  std::vector<int32_t> classmate_text_ids_;
  std::vector<int32_t> last_prefill_ids_;
  int64_t requests_submitted_ = 0;
  int64_t requests_finished_ = 0;
  bool running_ = false;
  // Background jobs (engine_worker_jobs.cpp): QtConcurrent::run on a pool of their own, each
  // reporting through its QPromise to a QFutureWatcher on this thread.
  struct ReencodedWeights {
    std::shared_ptr<model::Model> model;  // null when re-encoding failed
    QString problem;
  };
  void watch_jobs();
  void finish_quant_lab();
  void finish_reencoding();
  void finish_timing_model();
  QThreadPool* jobs_;
  QFutureWatcher<QuantLabReport>* lab_;
  CancelToken lab_cancel_;  // the running lab's
  QFutureWatcher<ReencodedWeights>* reencoding_;
  QString reencoding_type_;  // the type being written
  QString weight_type_;      // "" while the file's own weights are in use
  // The timing model being written: its job (the problem, empty when written), file, backend,
  // expected bytes, and a timer polling the partial file's size for progress.
  QFutureWatcher<QString>* timing_;
  QString timing_path_;
  BackendChoice timing_backend_;
  std::atomic<uint64_t> timing_total_ = 0;
  QTimer* timing_timer_;
  bool shut_down_ = false;
  void adopt_model(std::shared_ptr<model::Model> model, const QString& weight_type);
  // Waits for every background job (the lab cancelled first).
  void wait_for_jobs();
};

}  // namespace servescope::gui
