#include "app/gui/remote/remote_connection.h"
#include "app/gui/window/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>
#include <algorithm>
#include <cmath>

#include "app/cli/commands.h"
#include "app/gui/engine_bridge/engine_client.h"
#include "app/gui/lesson_ui/learn_pane.h"
#include "app/gui/lesson_ui/lesson_ui.h"
#include "app/gui/lesson_ui/pinned_figures.h"
#include "app/gui/recording/recording_mark.h"
#include "app/gui/recording/replay_player.h"
#include "app/gui/recording/trace_recorder.h"
#include "app/gui/window/model_picker.h"
#include "app/gui/window/settled_choice.h"
#include "app/gui/window/shortcut_tip.h"
#include "app/gui/window/token_chips.h"
#include "app/gui/window/token_display.h"
#include "app/gui/window/window_text.h"
#include "app/lessons/progress_store.h"
#include "engine/compute/devices.h"
#include "engine/model/model.h"
#include "widgets/quantisation_panel.h"
#include "widgets/theme.h"

namespace servescope::gui {
namespace {

// The bundled model's vocabulary size, which sets the timing models' embedding sizes.
int64_t bundled_vocab_size() {
  try {
    return model::read_model_config(gguf::GgufFile::open(cli::default_model_path())).vocab_size;
  } catch (const std::exception&) {
    return 0;  // the sizes are left out of the menus; writing will report the problem
  }
}

}  // namespace

MainWindow::MainWindow(const WindowOptions& options, QWidget* parent)
    : QMainWindow(parent), remember_settings_(options.remember_settings) {
  setWindowTitle(tr("ServeScope"));
  engine_ = new EngineClient(this);
  timing_folder_ = timing_models_folder(options.cache_folder.value_or(
      QStandardPaths::writableLocation(QStandardPaths::CacheLocation)));
  bundled_vocab_ = bundled_vocab_size();
  clock_.start();
  panels_ = std::make_unique<PanelHost>(
      this, [this](int layer, int head) { engine_->set_attention_head(layer, head); });
  pinned_ = new PinnedFigures(*this);
  quant_lab_ = new QuantLabController(
      *engine_, *qobject_cast<widgets::QuantisationPanel*>(panels_->panel(PanelId::kQuantisation)),
      [this] { return prompt_->toPlainText(); }, this);
  build_actions();
  build_toolbar();
  build_serving_toolbar();
  build_central();
  build_status_bar();
  build_menus();
  build_settings_table();
  lessons_ = new LessonUi(*this, options.lessons_folder.value_or(QString()),
                          options.progress_folder.value_or(
                              remember_settings_ ? lessons::default_progress_folder() : QString()));

  connect_engine();
  if (options.record) {
    recorder_ = new TraceRecorder(
        *engine_, options.record,
        [this] { return static_cast<double>(clock_.nsecsElapsed()) / 1e6; }, this);
    connect(recorder_, &TraceRecorder::failed, this, &MainWindow::on_failed);
    // Seen above the panels, lecture mode included, for as long as the recording runs.
    auto* mark = new RecordingMark(options.record);
    connect(recorder_, &TraceRecorder::failed, mark, &RecordingMark::stop);
    findChild<QHBoxLayout*>("figures-row")->addWidget(mark, 0, Qt::AlignRight);
    connect(&lessons_->learn(), &LearnPane::position_changed, recorder_,
            &TraceRecorder::record_lesson);
  }
  if (options.replay) start_replay(*options.replay, options.replay_speed);

  frame_timer_ = new QTimer(this);
  frame_timer_->setTimerType(Qt::PreciseTimer);
  connect(frame_timer_, &QTimer::timeout, this, &MainWindow::on_frame);
  frame_timer_->start(kFrameMs);

  restore_settings(options);
  apply_theme();
  send_sampling();
  engine_->set_samples(samples_->value());
  update_actions();
  if (options.remote) connect_to_server(*options.remote);
}

// The engine client, a child, cancels long work and ends the engine thread when destroyed.
MainWindow::~MainWindow() = default;

// --- actions ------------------------------------------------------------------------------

void MainWindow::open_model(const QString& path) {
  if (refused_in_replay()) return;
  show_message({}, false);
  work_->start(WorkProgress::Task::kLoad, loading_what(path));
  engine_->load_model(path, backend_);
}

void MainWindow::open_timing_model(const TimingModel& model) {
  if (refused_in_replay()) return;
  show_message({}, false);
  const QString path = timing_model_path(timing_folder_, model);
  if (!QFileInfo::exists(path)) {
    work_->start(WorkProgress::Task::kTimingModel,
                 tr("Writing the %1 %2 timing model").arg(model.label, model.type.toUpper()));
  } else {
    work_->start(WorkProgress::Task::kLoad, loading_what(path));
  }
  engine_->open_timing_model(model, path, backend_);
}

void MainWindow::set_backend(const BackendChoice& backend) {
  open_model_on(
      model_path_.isEmpty() ? QString::fromStdString(cli::default_model_path()) : model_path_,
      backend);
}

void MainWindow::open_model_on(const QString& path, const BackendChoice& backend) {
  backend_ = backend;
  update_activations_picker();
  open_model(path);
}

void MainWindow::set_greedy(bool greedy) { greedy_->setChecked(greedy); }

void MainWindow::set_prompt(const QString& text) { prompt_->setPlainText(text); }

void MainWindow::set_classmates(int count) { classmates_->setValue(count); }

void MainWindow::set_samples(int count) { samples_->setValue(count); }

int MainWindow::samples() const { return samples_->value(); }

void MainWindow::forget_cached_prefixes() {
  prefill_timer_->stop();  // a pending typing prefill would cache the prompt again
  engine_->forget_cached_prefixes();
}

void MainWindow::set_max_tokens(int count) { max_tokens_->setValue(count); }

void MainWindow::set_continuous_classmates(bool continuous) {
  continuous_classmates_ = continuous;
  if (remote_) remote_->set_continuous_classmates(continuous);
  engine_->set_continuous_classmates(continuous);
}

void MainWindow::set_speed(Speed speed) {
  const int index = speed_picker_->findData(static_cast<int>(speed));
  if (index >= 0) speed_picker_->setCurrentIndex(index);
  if (player_) return pace_replay(speed);
  engine_->set_speed(speed);
}

void MainWindow::set_kv_type(gguf::GgmlType type) {
  const int index = kv_picker_->findData(static_cast<int>(type));
  if (index >= 0) kv_picker_->setCurrentIndex(index);
  engine_->set_kv_type(type);
}

gguf::GgmlType MainWindow::kv_type() const {
  return static_cast<gguf::GgmlType>(kv_picker_->currentData().toInt());
}

void MainWindow::set_keep_kv(bool keep) { engine_->set_keep_kv(keep); }

void MainWindow::set_batching(const BatchingChoice& batching) {
  const QSignalBlocker block(batch_wait_);  // one message to the worker, not two
  batching_picker_->setCurrentIndex(batching.static_batches ? 1 : 0);
  batch_wait_->setValue(batching.wait_ms);
  send_batching();
}

BatchingChoice MainWindow::batching() const {
  return BatchingChoice{batching_picker_->currentData().toBool(), batch_wait_->value()};
}

void MainWindow::send_batching() { engine_->set_batching(batching()); }

void MainWindow::set_quantised_activations(bool on) {
  if (backend_.kind != compute::BackendKind::kCpu) {
    update_activations_picker();
    return;
  }
  BackendChoice backend = backend_;
  backend.quantised_activations = on;
  set_backend(backend);
}

QString MainWindow::collecting_status() const {
  const double now = static_cast<double>(clock_.nsecsElapsed()) / 1e6;
  const BatchCollecting& collecting = batch_collecting();
  return collecting_text(collecting, collecting.due_in_ms - (now - collecting_at_ms_));
}

void MainWindow::generate() {
  if (refused_in_replay() || generating()) return;
  if (remote_) return generate_remote();
  prefill_timer_->stop();
  prompt_chips_->set_pending_from(-1);
  output_chips_->clear_tokens();
  show_message({}, false);
  engine_->generate(prompt_->toPlainText());
  update_actions();
}

void MainWindow::stop() {
  if (remote_) remote_->stop();
  if (sweeping()) stop_batch_sweep();
  if (generating()) engine_->stop();
}

void MainWindow::show_model_details() {
  if (!engine_info()) return;
  QMessageBox box(QMessageBox::NoIcon, tr("Model details"), model_details_html(*engine_info()),
                  QMessageBox::Close, this);
  box.setTextFormat(Qt::RichText);
  box.setTextInteractionFlags(Qt::TextSelectableByMouse);
  box.exec();
}

void MainWindow::stop_batch_sweep() {
  if (!sweeping()) return;
  engine_->stop_sweep();
  statusBar()->showMessage(tr("Stopping the batch sweep..."));
}

void MainWindow::step() {
  if (player_) return player_->step();
  engine_->step_once();
}

void MainWindow::sweep_batch_sizes() {
  if (sweeping()) return;
  engine_->run_batch_sweep();
  update_actions();
  statusBar()->showMessage(tr("Sweeping batch sizes 1 to 16 (%1 stops)...").arg(stop_keys()));
  work_->start(WorkProgress::Task::kBatchSweep, tr("Sweeping batch sizes 1 to 16"));
  show_panel(PanelId::kBatching);
}

void MainWindow::run_staggered_load(const StaggeredLoad& load) {
  if (sweeping()) return;
  engine_->run_staggered_load(load);
  update_actions();
  statusBar()->showMessage(tr("Staggered load: %1 requests arriving at %2 per second (%3 stops)...")
                               .arg(load.clients)
                               .arg(load.rate_per_s)
                               .arg(stop_keys()));
  work_->start(
      WorkProgress::Task::kStaggeredLoad,
      tr("Staggered load, %1: %2 requests").arg(batching_text(load.batching)).arg(load.clients));
}

// The keys that stop a run, as the status bar names them: Stop's own shortcut, never written
// by hand.
QString MainWindow::stop_keys() const { return shortcut_text(stop_action_->shortcut()); }

void MainWindow::show_panel(PanelId panel) { tabs_->setCurrentIndex(static_cast<int>(panel)); }

PanelId MainWindow::current_panel() const {
  return kAllPanels[static_cast<size_t>(std::clamp(tabs_->currentIndex(), 0, int(kAllPanels.size()) - 1))];
}

Speed MainWindow::speed() const { return static_cast<Speed>(speed_picker_->currentData().toInt()); }

void MainWindow::set_dark_theme(bool dark) {
  dark_ = dark;
  if (dark_action_->isChecked() != dark) dark_action_->setChecked(dark);
  apply_theme();
}

void MainWindow::scale_font(int steps) {
  QFont font = QApplication::font();
  const double size =
      std::clamp(font.pointSizeF() * std::pow(1.15, steps), kMinFontPoints, kMaxFontPoints);
  font.setPointSizeF(size);
  QApplication::setFont(font);
}

void MainWindow::show_overlay(bool on) { overlay_action_->setChecked(on); }

void MainWindow::set_controls_visible(bool visible) {
  if (auto* splitter = findChild<QSplitter*>("main-splitter"))
    splitter->widget(0)->setVisible(visible);
  for (QToolBar* bar : findChildren<QToolBar*>()) bar->setVisible(visible);
  menuBar()->setVisible(visible);
  statusBar()->setVisible(visible);
  tabs_->tabBar()->setVisible(visible);
  // One panel fills what is left; a panel that cannot fit says so instead of pushing the
  // window past the screen (0 x 0: back to the panels' own minimum sizes).
  tabs_->setMinimumSize(visible ? QSize(0, 0) : QSize(320, 240));
}

QString MainWindow::step_weight_type(int delta) { return weights_choice_->step(delta); }

QString MainWindow::step_backend(int delta) { return backend_choice_->step(delta); }

void MainWindow::set_high_contrast(bool on) {
  high_contrast_ = on;
  apply_theme();
}

void MainWindow::send_sampling() {
  serving::SamplingParams p;
  p.greedy = greedy_->isChecked();
  p.temperature = static_cast<float>(temperature_->value());
  p.top_k = top_k_->value();
  p.top_p = static_cast<float>(top_p_->value());
  p.seed = static_cast<uint64_t>(seed_->value());
  for (QWidget* w : std::initializer_list<QWidget*>{temperature_, top_k_, top_p_, seed_}) {
    w->setEnabled(!p.greedy);
  }
  engine_->set_sampling(p);
}

void MainWindow::update_actions() {
  // A replay runs no engine; remote mode runs the server's, which has no Step or Sweep here.
  const bool local = engine_info().has_value() && !player_ && !remote_;
  generate_action_->setEnabled((local || remote_connected()) && !generating());
  stop_action_->setEnabled(generating() || sweeping());
  step_action_->setEnabled(local && engine_->state().running);
  sweep_action_->setEnabled(local && !sweeping());
  disconnect_action_->setEnabled(remote_ != nullptr);
}

bool MainWindow::generating() const {
  return engine_->state().generating || (remote_ && remote_->generating());
}

// --- messages ---------------------------------------------------------------------------

void MainWindow::on_failed(const QString& text) {
  show_message(text, true);
  Q_EMIT failed(text);
}

void MainWindow::show_message(const QString& text, bool error) {
  message_is_error_ = error;
  message_->setVisible(!text.isEmpty());
  message_->setText(text);
  const widgets::Theme& theme = widgets::theme();
  message_->setStyleSheet(QString("QLabel { color: %1; border: 1px solid %2; padding: 6px; }")
                              .arg(theme.text.name(), (error ? theme.warning : theme.grid).name()));
}

int MainWindow::classmates() const { return classmates_->value(); }

int MainWindow::max_tokens() const { return max_tokens_->value(); }

bool MainWindow::greedy() const { return greedy_->isChecked(); }

QString MainWindow::prompt() const { return prompt_->toPlainText(); }

void MainWindow::show_random_weights(bool random) {
  const QString note = random_weights_note_text();
  status_random_->setText(QString("<b>%1</b>").arg(note));
  status_random_->setStyleSheet(
      QString("QLabel { color: %1; }").arg(widgets::theme().warning.name()));
  status_random_->setVisible(random);
  setWindowTitle(
      random ? tr("ServeScope - %1 (%2)").arg(name_without_note(engine_info()->model_name), note)
             : tr("ServeScope"));
}

QString MainWindow::random_weights_note() const {
  return status_random_->isVisible() ? random_weights_note_text() : QString();
}

// isHidden, not isVisible: a message set before the window is shown is still its message.
QString MainWindow::message() const { return message_->isHidden() ? QString() : message_->text(); }

const QVector<GeneratedToken>& MainWindow::generated_tokens() const {
  return output_chips_->tokens();
}

const QVector<GeneratedToken>& MainWindow::prompt_tokens() const { return prompt_chips_->tokens(); }

void MainWindow::on_prompt_edited() {
  if (!engine_info() || !engine_info()->tokenizer) return;
  const Tokenizer& tokenizer = *engine_info()->tokenizer;
  const int already = static_cast<int>(prompt_chips_->tokens().size());
  QVector<GeneratedToken> chips;
  try {
    for (const int32_t id : tokenizer.encode_with_bos(prompt_->toPlainText().toStdString())) {
      GeneratedToken chip;
      chip.id = id;
      chip.text = token_display_text(tokenizer, id);
      chips.push_back(chip);
    }
  } catch (const std::exception& error) {
    show_message(tr("Prompt: %1").arg(error.what()), true);
    return;
  }
  const int common = [&] {
    int n = 0;
    const auto& old = prompt_chips_->tokens();
    while (n < std::min(already, static_cast<int>(chips.size())) && old[n].id == chips[n].id) ++n;
    return n;
  }();
  prompt_chips_->set_tokens(chips);
  if (common < chips.size()) prompt_chips_->set_pending_from(common);
  if (chips.size() >= engine_info()->context_length) {
    show_message(tr("The prompt is %1 tokens; the model's context holds %2.")
                     .arg(chips.size())
                     .arg(engine_info()->context_length),
                 true);
  }
  if (!generating()) prefill_timer_->start();
}

// --- the theme ------------------------------------------------------------------------------

void MainWindow::apply_theme() {
  widgets::set_theme(dark_ ? widgets::ThemeKind::kDark : widgets::ThemeKind::kLight,
                     high_contrast_);
  QApplication::setPalette(widgets::palette_of(widgets::theme()));
  for (QWidget* w : findChildren<QWidget*>()) w->update();
  show_message(message(), message_is_error_);
  if (engine_info()) show_random_weights(engine_info()->random_weights);  // in the theme's colour
}

}  // namespace servescope::gui
