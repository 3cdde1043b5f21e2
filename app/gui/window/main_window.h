// The ServeScope window: prompt editor with live token chips, Generate / Stop / Step, the
// generated tokens shaded by probability, sampling controls, a toolbar for model, backend,
// KV precision, classmates and speed, a status bar of measured figures, and the seven panels.
// The engine runs on its own thread behind an EngineClient, the window's only way to it; a
// frame timer drains its telemetry, folds it and refreshes the panels, so the GUI thread
// never waits for the engine.
#pragma once

#include <QElapsedTimer>
#include <QMainWindow>
#include <QUrl>
#include <QVector>
#include <array>
#include <memory>
#include <optional>

#include "app/gui/engine_bridge/engine_client.h"
#include "app/gui/engine_bridge/engine_types.h"
#include "app/gui/window/frame_stats.h"
#include "app/gui/panels/panel_host.h"
#include "app/gui/panels/panel_id.h"
#include "app/gui/engine_bridge/quant_lab.h"
#include "app/gui/panels/telemetry_folder.h"
#include "app/gui/engine_bridge/timing_models.h"
#include "app/gui/window/quant_lab_controller.h"
#include "app/gui/window/settings_table.h"
#include "app/gui/window/work_progress.h"

class QAction;
class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QMenu;
class QPlainTextEdit;
class QScrollArea;
class QSpinBox;
class QTabWidget;
class QTimer;

namespace servescope::gui {

class DeploymentsWindow;
class ModelPicker;
class SettledChoice;

class LessonUi;
class PinnedFigures;
class RemoteConnection;
class ReplayPlayer;
class TokenChips;
class TraceRecorder;
class TraceWriter;
struct Trace;

struct WindowOptions {
  bool remember_settings = true;  // false: neither read nor write QSettings (demo, tests)
  std::optional<QString> model;
  std::optional<BackendChoice> backend;
  std::optional<bool> dark_theme;
  // Override the remembered batching control parts given, and the CPU backend's activations.
  std::optional<bool> static_batching;
  std::optional<int> batch_wait_ms;
  std::optional<bool> quantised_activations;
  // Where timing models are written: the user's cache folder (QStandardPaths) when not given.
  std::optional<QString> cache_folder;
  // Where the lesson files are: the data folder's lessons/ when not given.
  std::optional<QString> lessons_folder;
  // Where the learner's progress.json is kept: the platform's application-data folder when not
  // given and settings are remembered; in memory only otherwise (demo, tests).
  std::optional<QString> progress_folder;
  // --record: what the window receives from its engine is written to this trace.
  std::shared_ptr<TraceWriter> record;
  // --replay: a recorded run played into the panels at this speed; no model is loaded.
  std::shared_ptr<const Trace> replay;
  double replay_speed = 1.0;
  // --remote: attach to this serving engine at startup (remote mode).
  std::optional<QUrl> remote;
};

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  // The font sizes scaling and a remembered size both keep to, in points.
  static constexpr double kMinFontPoints = 6.0;
  static constexpr double kMaxFontPoints = 48.0;

  explicit MainWindow(const WindowOptions& options, QWidget* parent = nullptr);
  ~MainWindow() override;

  // The actions a person, the demo and the tests all use.
  void open_model(const QString& path);
  // Loads a random-weight timing model from the cache folder, writing it there first in the
  // background when it is not there yet (the current model keeps serving meanwhile).
  void open_timing_model(const TimingModel& model);
  void set_backend(const BackendChoice& backend);
  // The model at `path` on that backend, in one reload (a lesson's engine given back).
  void open_model_on(const QString& path, const BackendChoice& backend);
  void set_prompt(const QString& text);
  void set_classmates(int count);
  void set_samples(int count);
  void set_max_tokens(int count);
  void set_continuous_classmates(bool continuous);
  void set_speed(Speed speed);
  void set_kv_type(gguf::GgmlType type);
  // false: serve without a KV cache (each token recomputes its context); the status bar says so.
  void set_keep_kv(bool keep);
  // Continuous or static batching (with its wait), from the next batch on.
  void set_batching(const BatchingChoice& batching);
  // CPU backend only: 8-bit activations (true) or the exact float path; the model is reloaded
  // on a backend built with the option. Ignored on Vulkan.
  void set_quantised_activations(bool on);
  void set_greedy(bool greedy);
  // The next generate prefills its whole prompt, none of it from the prefix cache.
  void forget_cached_prefixes();
  void generate();
  void stop();
  void step();
  void sweep_batch_sizes();
  // Ends a running batch sweep after the engine step in progress; the sizes measured so far
  // stay (batch_sweep_finished follows).
  void stop_batch_sweep();
  // Runs a staggered load on an engine of its own (EngineWorker::run_staggered_load), the
  // live engine waiting as for the sweep; stop_batch_sweep ends it early, and
  // staggered_load_finished follows. Ignored while a sweep or another load runs.
  void run_staggered_load(const servescope::gui::StaggeredLoad& load);
  // File > Model details (Ctrl+I): the loaded model's facts and provenance in a dialog.
  void show_model_details();
  // View > Here and there (Ctrl+Shift+H): the engine's formulas on published models and
  // datasheet devices beside this machine as its probe measured it (a window of its own).
  void show_deployments();
  DeploymentsWindow* deployments() const { return deployments_; }  // none before it was shown
  void show_panel(PanelId panel);
  void set_dark_theme(bool dark);
  void scale_font(int steps);
  void show_overlay(bool on);
  // Lecture mode's view: false hides the controls column, toolbar, menus, status bar and the
  // panel tabs, leaving the panel on screen.
  void set_controls_visible(bool visible);
  // The theme with full-strength text and grid lines (lecture mode).
  void set_high_contrast(bool on);
  // Lecture mode's keys: the Weights / Backend picker's entry `delta` rows on (wrapping),
  // shown at once and chosen as a person would choose it there when the presses stop
  // (SettledChoice); returns the entry's text.
  QString step_weight_type(int delta);
  QString step_backend(int delta);

  // The menus the Learn pane adds its entries to (by object: a title may be translated).
  QMenu* file_menu() const { return file_menu_; }
  QMenu* view_menu() const { return view_menu_; }

  // What the window shows, for tests and the demo.
  const TelemetryFolder& folder() const { return folder_; }
  const PanelHost& panels() const { return *panels_; }
  const std::optional<EngineInfo>& engine_info() const { return engine_->state().info; }
  // The batching the engine's scheduler holds now (set_batching asks for a change).
  const BatchingChoice& engine_batching() const { return engine_->state().batching; }
  // The long work under way (a timing model written, a model loading, ...); lecture mode shows it.
  const WorkProgress& work() const { return *work_; }
  const QVector<GeneratedToken>& generated_tokens() const;
  const QVector<GeneratedToken>& prompt_tokens() const;
  QString message() const;
  // The status bar's persistent note while a random-weight model is loaded, else empty.
  QString random_weights_note() const;
  QString timing_folder() const { return timing_folder_; }
  bool generating() const;
  // A model asked for and not yet answered (loaded, or refused with a message).
  bool loading() const { return engine_->state().loading; }
  // The user's request in the engine (-1 before the first generation names one).
  qint64 user_request() const { return engine_->state().user_request; }
  Speed speed() const;
  // The last batch-size sweep (empty before one finished, or after the engine was rebuilt).
  const QVector<BatchSweepPoint>& batch_sweep() const { return engine_->state().batch_sweep; }
  // A batch sweep or a staggered load runs on its own engine (the live engine waits).
  bool sweeping() const { return engine_->state().sweeping; }
  // The last staggered load (none before one finished, or after the engine was rebuilt).
  const std::optional<StaggeredLoadResult>& staggered_load() const {
    return engine_->state().staggered_load;
  }
  // The quantisation lab: its last report, the comparison running now (or how the last one
  // ended), and the weight types it compares; compare_quantisation() runs it again on others.
  // A model's first comparison starts when the Quantisation panel is first shown.
  const std::optional<QuantLabReport>& quant_lab() const { return quant_lab_->report(); }
  const widgets::QuantRunState& quant_run() const { return quant_lab_->run(); }
  const QStringList& quant_types() const { return quant_lab_->types(); }
  const widgets::QuantLimits& quant_limits() const { return quant_lab_->limits(); }
  void compare_quantisation(const QStringList& types);
  void cancel_quantisation();
  // Shows the Quantisation panel's block tab on this type; false when it has no such block.
  bool show_quant_block(const QString& type);
  const std::vector<TimingModel>& timing_models() const { return timing_models_; }
  PanelId current_panel() const;
  // The pinned run's figures and the strip that compares the current run with them.
  PinnedFigures& pinned_figures() const { return *pinned_; }
  // The batching the window asks for (the engine's own is engine_batching()).
  BatchingChoice batching() const;
  bool quantised_activations() const { return backend_.quantised_activations; }
  // The backend the window asks for, the model file it last loaded (empty before one), the KV
  // type its picker holds, and whether the engine keeps a KV cache.
  const BackendChoice& backend_choice() const { return backend_; }
  const QString& model_path() const { return model_path_; }
  gguf::GgmlType kv_type() const;
  bool keep_kv() const { return !engine_info() || engine_info()->keep_kv; }
  // The static batch collecting now, as the engine last reported it (waiting 0: none), and
  // the status bar's text for it.
  const BatchCollecting& batch_collecting() const { return engine_->state().collecting; }
  QString collecting_status() const;
  int classmates() const;
  int samples() const;  // Sampling > Samples
  int max_tokens() const;
  bool greedy() const;
  bool dark_theme() const { return dark_; }
  QString prompt() const;
  // Time between frame ticks, and the GUI thread's own work in each (drain, fold, snapshots).
  const FrameStats& frame_stats() const { return frame_stats_; }
  const FrameStats& frame_work() const { return frame_work_; }

  // The lessons: the Learn dock, lecture mode and the dispatcher of their experiments.
  LessonUi& lessons() const { return *lessons_; }

  // The recorded run being played (replay mode), else null; and the recording, else null.
  ReplayPlayer* replay_player() const { return player_; }
  const TraceRecorder* recorder() const { return recorder_; }

  // Remote mode (main_window_remote.cpp): the panels show a real serving engine at `server`
  // (an OpenAI-compatible server: llama-server, vLLM), and Generate sends the prompt and the
  // classmates there; the local engine waits, loaded, until disconnect_from_server(). A
  // connection that fails returns to the local engine with a message.
  void connect_to_server(const QUrl& server);
  void disconnect_from_server();
  bool remote_mode() const;       // connected or connecting
  bool remote_connected() const;  // the server answered
  const RemoteConnection* remote() const { return remote_; }

  // Forgets every remembered setting (the --reset option).
  static void forget_settings();

 Q_SIGNALS:
  void engine_ready(const servescope::gui::EngineInfo& info);
  void failed(const QString& message);
  void generation_finished(servescope::gui::GenerationEnd end);
  void engine_idle(const servescope::gui::EngineCounters& counters);
  void batch_sweep_finished();
  void staggered_load_finished();
  void batching_changed(const servescope::gui::BatchingChoice& batching);
  void batch_collecting_changed(const servescope::gui::BatchCollecting& state);
  void panel_shown(servescope::gui::PanelId panel);
  // A frame's telemetry is drained, folded and handed to the panels (tests wait for frames,
  // not for time).
  void frame_folded();
  // Remote mode: the server answered (description: its address and model).
  void remote_connected_to(const QString& description);

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  static constexpr int kFrameMs = 16;          // the frame timer: telemetry drained, panels fed
  static constexpr int kPrefillPauseMs = 300;  // typing pause before the prompt is prefilled

  // Building the window (main_window_build.cpp).
  void build_settings_table();  // the remembered controls, at their defaults
  void build_actions();
  void build_toolbar();
  void build_serving_toolbar();
  void send_batching();
  void update_activations_picker();
  // Stop's shortcut as the platform spells it, for status lines that say how to stop a run.
  QString stop_keys() const;
  void build_central();
  void build_status_bar();
  void build_menus();
  void connect_engine();
  void connect_staggered_load();
  void restore_settings(const WindowOptions& options);
  void keep_on_screen();  // the whole restored window inside the screen's available area
  void save_settings() const;
  void fill_backend_picker();
  void add_timing_models(QMenu* menu);
  void show_random_weights(bool random);
  void show_timing_progress(quint64 written, quint64 total, const QString& path);
  void on_engine_ready(const EngineInfo& info);
  void on_load_failed(const QString& message, bool serving);
  void forget_engine();
  void show_loaded_in_pickers();
  void on_prompt_edited();
  void on_failed(const QString& message);
  void show_message(const QString& text, bool error);
  void send_sampling();
  void on_frame();
  void update_kv_status();
  void update_status();
  void update_generated_chips();
  void update_sample_texts();
  void update_overlay();
  void apply_theme();
  void update_actions();
  // Replay mode (main_window_replay.cpp): the player, its bar above the panels, the engine's
  // controls off. A replay loads no model: refused_in_replay() says so and returns true.
  void start_replay(const Trace& trace, double speed);
  bool refused_in_replay();
  // The pace keys (lecture mode's P, S) on a replay: single step pauses it, the others play.
  void pace_replay(Speed speed);
  // Remote mode's parts (main_window_remote.cpp).
  void ask_for_server();  // File > Connect to a server...
  void generate_remote();
  void refresh_remote_panels();
  void update_remote_status();
  void enable_local_engine_controls(bool enabled);
  // The recorded run's Learn pane showed this lesson step: this one shows it too.
  void show_replayed_lesson(const QString& lesson, const QString& step);

  EngineClient* engine_ = nullptr;  // the only way to the engine thread
  LessonUi* lessons_ = nullptr;
  PinnedFigures* pinned_ = nullptr;
  WorkProgress* work_ = new WorkProgress(this);
  TraceRecorder* recorder_ = nullptr;
  ReplayPlayer* player_ = nullptr;
  RemoteConnection* remote_ = nullptr;  // remote mode, else null
  std::array<uint64_t, kAllPanels.size()> remote_shown_{};  // the folder revision each panel shows
  bool continuous_classmates_ = false;
  bool asked_for_server_ = false;  // the connection under way was asked for in the dialog
  bool remember_settings_;
  SettingsTable settings_table_;

  TelemetryFolder folder_;
  std::unique_ptr<PanelHost> panels_;
  // The frame pump: the telemetry queue it drains (the engine's, kept until the engine's last
  // records are folded after it is replaced or gone), and the revisions of the client's state
  // the panels last showed.
  std::shared_ptr<telemetry::TelemetryQueue> queue_;
  QString served_;  // model path | backend of the engine last shown
  FoldRevisions folder_seen_;  // what the panels were last fed from the folder
  uint64_t shown_info_revision_ = 0;
  uint64_t shown_sweep_revision_ = 0;
  uint64_t shown_collecting_revision_ = 0;
  FrameStats frame_stats_;
  FrameStats frame_work_;
  QElapsedTimer clock_;
  double last_frame_ms_ = -1.0;
  double last_status_ms_ = -1.0;
  AttentionSample attention_;
  QuantLabController* quant_lab_ = nullptr;
  uint64_t shown_quant_revision_ = 0;
  uint64_t attention_seen_ = 0;
  double collecting_at_ms_ = 0.0;  // clock_ time when the collecting batch was last reported
  Speed panels_speed_ = Speed::kRealTime;  // the pace the panels were last told
  bool dark_ = false;
  bool high_contrast_ = false;
  bool message_is_error_ = false;
  QString model_path_;
  BackendChoice backend_;
  QString timing_folder_;
  std::vector<TimingModel> timing_models_ = timing_model_presets();
  int64_t bundled_vocab_ = 0;  // for the timing models' sizes in the menus (0: unknown)

  QTimer* frame_timer_ = nullptr;
  QTimer* prefill_timer_ = nullptr;
  QAction* generate_action_ = nullptr;
  QAction* stop_action_ = nullptr;
  QAction* step_action_ = nullptr;
  QAction* sweep_action_ = nullptr;
  QAction* open_action_ = nullptr;
  QAction* connect_action_ = nullptr;
  QAction* disconnect_action_ = nullptr;
  QAction* overlay_action_ = nullptr;
  QAction* dark_action_ = nullptr;
  ModelPicker* model_picker_ = nullptr;
  QComboBox* backend_picker_ = nullptr;
  QComboBox* kv_picker_ = nullptr;
  QMenu* file_menu_ = nullptr;
  QMenu* view_menu_ = nullptr;
  QComboBox* weights_picker_ = nullptr;
  SettledChoice* weights_choice_ = nullptr;  // lecture mode's Q: one rebuild for Q Q Q
  SettledChoice* backend_choice_ = nullptr;  // and G
  QSpinBox* classmates_ = nullptr;
  QComboBox* speed_picker_ = nullptr;
  QSpinBox* max_tokens_ = nullptr;
  QComboBox* batching_picker_ = nullptr;
  QSpinBox* batch_wait_ = nullptr;
  QSpinBox* kv_budget_ = nullptr;  // MiB; 0: automatic
  QComboBox* activations_picker_ = nullptr;
  QPlainTextEdit* prompt_ = nullptr;
  TokenChips* prompt_chips_ = nullptr;
  TokenChips* output_chips_ = nullptr;
  QLabel* message_ = nullptr;
  QCheckBox* greedy_ = nullptr;
  QDoubleSpinBox* temperature_ = nullptr;
  QSpinBox* top_k_ = nullptr;
  QDoubleSpinBox* top_p_ = nullptr;
  QSpinBox* seed_ = nullptr;
  QSpinBox* samples_ = nullptr;
  QLabel* samples_text_ = nullptr;  // the further samples' continuations, under the user's
  QScrollArea* samples_scroll_ = nullptr;
  uint64_t samples_text_revision_ = 0;  // the folder's request revision it was made from
  QTabWidget* tabs_ = nullptr;
  QLabel* overlay_ = nullptr;
  DeploymentsWindow* deployments_ = nullptr;
  QLabel* status_device_ = nullptr;
  QLabel* status_model_ = nullptr;
  QLabel* status_kv_ = nullptr;
  QLabel* status_rate_ = nullptr;
  QLabel* status_batching_ = nullptr;
  QLabel* status_random_ = nullptr;
};

}  // namespace servescope::gui
