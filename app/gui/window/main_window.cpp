#include "app/gui/window/main_window.h"
#include "app/gui/lesson_ui/pinned_figures.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScreen>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardItemModel>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "app/cli/commands.h"
#include "app/gui/engine_bridge/engine_client.h"
#include "app/gui/lesson_ui/learn_pane.h"
#include "app/gui/lesson_ui/lesson_ui.h"
#include "app/gui/recording/recording_mark.h"
#include "app/gui/recording/replay_player.h"
#include "app/gui/window/token_chips.h"
#include "app/gui/window/token_display.h"
#include "app/gui/recording/trace_recorder.h"
#include "app/gui/window/settled_choice.h"
#include "app/gui/window/window_text.h"
#include "app/lessons/progress_store.h"
#include "engine/compute/devices.h"
#include "engine/model/model.h"
#include "widgets/theme.h"

namespace servescope::gui {
namespace {

constexpr double kStatusEveryMs = 250.0;
constexpr int kMaxRecent = 6;
constexpr const char* kSuggestedPrompt = "Once upon a time";

// The bundled model's vocabulary size, which sets the timing models' embedding sizes.
int64_t bundled_vocab_size() {
  try {
    return model::read_model_config(gguf::GgufFile::open(cli::default_model_path())).vocab_size;
  } catch (const std::exception&) {
    return 0;  // the sizes are left out of the menus; writing will report the problem
  }
}

QSettings settings() { return QSettings("ServeScope", "servescope"); }

// Why the settings cannot be kept, or empty. QSettings itself says nothing when its file is a
// folder: it reads nothing and writes nothing.
QString settings_problem() {
  QSettings s = settings();
  const QFileInfo file(s.fileName());
  if (file.exists() && !file.isFile()) {
    return QString(
               "Settings cannot be read or saved: %1 is a folder, not a file. Move it aside "
               "for ServeScope to remember your settings.")
        .arg(s.fileName());
  }
  s.sync();
  if (s.status() == QSettings::AccessError) {
    return QString("Settings cannot be read or saved: %1 is not accessible.").arg(s.fileName());
  }
  if (s.status() == QSettings::FormatError) {
    return QString("Settings cannot be read: %1 is not a settings file; they start afresh.")
        .arg(s.fileName());
  }
  return {};
}

// A quantisation limit in the settings: its number, or "off" (infinity: no limit).
QString limit_text(double limit) {
  return std::isfinite(limit) ? QString::number(limit, 'g', 17) : QStringLiteral("off");
}

double limit_from(const QSettings& s, const QString& key, double fallback) {
  const QString text = s.value(key).toString();
  if (text == "off") return std::numeric_limits<double>::infinity();
  bool ok = false;
  const double value = text.toDouble(&ok);
  return ok && value >= 0.0 ? value : fallback;
}

widgets::QuantLimits restore_quant_limits(const QSettings& s) {
  const widgets::QuantLimits defaults = default_lab_limits();
  widgets::QuantLimits limits;
  limits.max_kl = limit_from(s, "quantisation/max_kl", defaults.max_kl);
  limits.max_tpot_ms = limit_from(s, "quantisation/max_tpot_ms", defaults.max_tpot_ms);
  limits.min_speedup = limit_from(s, "quantisation/min_speedup", defaults.min_speedup);
  if (!std::isfinite(limits.min_speedup)) limits.min_speedup = defaults.min_speedup;
  return limits;
}

// The backend a loaded engine runs on; the Vulkan device asked for (-1: the best) is kept.
BackendChoice loaded_backend(const EngineInfo& info, const BackendChoice& asked) {
  return info.backend == "vulkan"
             ? BackendChoice{compute::BackendKind::kVulkan, asked.device,
                             asked.quantised_activations}
             : BackendChoice{compute::BackendKind::kCpu, -1, info.quantised_activations};
}

void save_quant_limits(QSettings& s, const widgets::QuantLimits& limits) {
  s.setValue("quantisation/max_kl", limit_text(limits.max_kl));
  s.setValue("quantisation/max_tpot_ms", limit_text(limits.max_tpot_ms));
  s.setValue("quantisation/min_speedup", limit_text(limits.min_speedup));
}

}  // namespace

MainWindow::MainWindow(const WindowOptions& options, QWidget* parent)
    : QMainWindow(parent), remember_settings_(options.remember_settings) {
  setWindowTitle("ServeScope");
  engine_ = new EngineClient(this);
  timing_folder_ = timing_models_folder(options.cache_folder.value_or(
      QStandardPaths::writableLocation(QStandardPaths::CacheLocation)));
  bundled_vocab_ = bundled_vocab_size();
  clock_.start();
  panels_ = std::make_unique<PanelHost>(this, [this](int layer, int head) {
    engine_->set_attention_head(layer, head);
  });
  pinned_ = new PinnedFigures(*this);
  build_actions();
  build_toolbar();
  build_serving_toolbar();
  build_central();
  build_status_bar();
  build_menus();
  lessons_ = new LessonUi(*this, options.lessons_folder.value_or(QString()),
                          options.progress_folder.value_or(
                              remember_settings_ ? lessons::default_progress_folder() : QString()));

  connect_engine();
  connect_quantisation_panel();
  if (options.record) {
    recorder_ = new TraceRecorder(*engine_, options.record, [this] {
      return static_cast<double>(clock_.nsecsElapsed()) / 1e6;
    }, this);
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
  update_actions();
}

// The engine client, a child, cancels long work and ends the engine thread when destroyed.
MainWindow::~MainWindow() = default;

// --- settings ---------------------------------------------------------------------------

void MainWindow::forget_settings() { settings().clear(); }

void MainWindow::restore_settings(const WindowOptions& options) {
  QString model = QString::fromStdString(cli::default_model_path());
  std::optional<BackendChoice> backend;
  bool dark = false;
  bool q8_activations = false;  // remembered apart from the backend, which options may name
  if (remember_settings_) {
    QSettings s = settings();
    restoreGeometry(s.value("window/geometry").toByteArray());
    keep_on_screen();
    restoreState(s.value("window/state").toByteArray());
    if (auto* splitter = findChild<QSplitter*>("main-splitter")) {
      splitter->restoreState(s.value("window/splitter").toByteArray());
    }
    // A remembered model that is gone (a cleared cache folder's timing model) gives way to the
    // bundled one.
    const QString remembered = s.value("engine/model", model).toString();
    if (QFileInfo::exists(remembered)) model = remembered;
    q8_activations = s.value("engine/activations", "f32").toString() == "q8_0";
    if (s.contains("quantisation/types")) {
      quant_types_ = s.value("quantisation/types").toStringList();
    }
    quant_limits_ = restore_quant_limits(s);
    // Before version 2 the first run chose any Vulkan device, lavapipe included, and that
    // choice was remembered as if made; those settings start from the new default.
    if (s.value("settings/version", 1).toInt() >= 2 && s.contains("engine/backend")) {
      backend = BackendChoice{s.value("engine/backend").toString() == "vulkan"
                                  ? compute::BackendKind::kVulkan
                                  : compute::BackendKind::kCpu,
                              s.value("engine/device", -1).toInt()};
    }
    classmates_->setValue(s.value("engine/classmates", 0).toInt());
    max_tokens_->setValue(s.value("engine/max_tokens", 200).toInt());
    const int kv = kv_picker_->findData(s.value("engine/kv_type", 1).toInt());
    if (kv >= 0) kv_picker_->setCurrentIndex(kv);
    batching_picker_->setCurrentIndex(s.value("engine/static_batching", false).toBool() ? 1 : 0);
    batch_wait_->setValue(s.value("engine/batch_wait_ms", 200).toInt());
    // Clamped to the box's range; the change reaches the worker through valueChanged.
    kv_budget_->setValue(s.value("engine/kv_budget_mib", 0).toInt());
    const int speed = speed_picker_->findData(s.value("engine/speed", 0).toInt());
    if (speed >= 0) speed_picker_->setCurrentIndex(speed);
    greedy_->setChecked(s.value("sampling/greedy", false).toBool());
    temperature_->setValue(s.value("sampling/temperature", 0.8).toDouble());
    top_k_->setValue(s.value("sampling/top_k", 0).toInt());
    top_p_->setValue(s.value("sampling/top_p", 0.95).toDouble());
    seed_->setValue(s.value("sampling/seed", 0).toInt());
    dark = s.value("view/dark", false).toBool();
    const double font_size = s.value("view/font_size", 0.0).toDouble();
    if (font_size > 0) {
      QFont font = QApplication::font();
      font.setPointSizeF(std::clamp(font_size, kMinFontPoints, kMaxFontPoints));
      QApplication::setFont(font);
    }
    prompt_->setPlainText(s.value("prompt/text", kSuggestedPrompt).toString());
  } else {
    prompt_->setPlainText(kSuggestedPrompt);
  }
  if (options.model) model = *options.model;
  if (options.backend) backend = options.backend;
  if (options.dark_theme) dark = *options.dark_theme;
  if (!backend) {
    // First run: a hardware GPU when there is one, else the CPU backend.
    const int row = std::max(0, backend_picker_->findData(true, kDefaultBackendRole));
    const int device = backend_picker_->itemData(row).toInt();
    backend = device < 0 ? BackendChoice{compute::BackendKind::kCpu, -1}
                         : BackendChoice{compute::BackendKind::kVulkan, device};
  }
  if (options.quantised_activations) q8_activations = *options.quantised_activations;
  if (q8_activations) backend->quantised_activations = true;
  if (options.static_batching) batching_picker_->setCurrentIndex(*options.static_batching ? 1 : 0);
  if (options.batch_wait_ms) batch_wait_->setValue(*options.batch_wait_ms);
  dark_ = dark;
  dark_action_->setChecked(dark);
  backend_ = *backend;
  update_activations_picker();
  // The worker learns the settings before it loads anything.
  const int classmates = classmates_->value();
  const int max_tokens = max_tokens_->value();
  const gguf::GgmlType kv = kv_type();
  const auto speed = static_cast<Speed>(speed_picker_->currentData().toInt());
  engine_->set_classmates(classmates);
  engine_->set_max_tokens(max_tokens);
  engine_->set_kv_type(kv);
  engine_->set_speed(speed);
  engine_->set_batching(batching());
  if (!player_) open_model(model);
  fill_model_picker();
  if (remember_settings_) {
    if (const QString problem = settings_problem(); !problem.isEmpty()) show_message(problem, true);
  }
}

void MainWindow::keep_on_screen() {
  // restoreGeometry keeps the title bar on screen, not the whole window: one saved at the
  // screen's full size came back 20 px lower, its status bar below the screen's edge.
  const QScreen* where = screen();
  if (!where) return;
  const QRect available = where->availableGeometry();
  QRect g = geometry();
  g.setSize(g.size().boundedTo(available.size()).expandedTo(minimumSizeHint()));
  g.moveLeft(std::max(available.left(), std::min(g.left(), available.right() + 1 - g.width())));
  g.moveTop(std::max(available.top(), std::min(g.top(), available.bottom() + 1 - g.height())));
  setGeometry(g);
}

void MainWindow::save_settings() const {
  if (!remember_settings_) return;
  QSettings s = settings();
  s.setValue("window/geometry", saveGeometry());
  s.setValue("window/state", saveState());
  if (auto* splitter = findChild<QSplitter*>("main-splitter")) {
    s.setValue("window/splitter", splitter->saveState());
  }
  s.setValue("settings/version", 2);
  // A model still loading at quit is the one asked for last (a lesson's engine given back).
  s.setValue("engine/model", loading() ? engine_->state().loading_path : model_path_);
  s.setValue("engine/backend", backend_.kind == compute::BackendKind::kVulkan ? "vulkan" : "cpu");
  s.setValue("engine/device", backend_.device);
  s.setValue("engine/classmates", classmates_->value());
  s.setValue("engine/max_tokens", max_tokens_->value());
  s.setValue("engine/kv_type", kv_picker_->currentData());
  s.setValue("engine/speed", speed_picker_->currentData());
  s.setValue("engine/static_batching", batching().static_batches);
  s.setValue("engine/batch_wait_ms", batch_wait_->value());
  s.setValue("engine/kv_budget_mib", kv_budget_->value());
  s.setValue("engine/activations", backend_.quantised_activations ? "q8_0" : "f32");
  s.setValue("quantisation/types", quant_types_);
  save_quant_limits(s, quant_limits_);
  s.setValue("sampling/greedy", greedy_->isChecked());
  s.setValue("sampling/temperature", temperature_->value());
  s.setValue("sampling/top_k", top_k_->value());
  s.setValue("sampling/top_p", top_p_->value());
  s.setValue("sampling/seed", seed_->value());
  s.setValue("view/dark", dark_);
  s.setValue("view/font_size", QApplication::font().pointSizeF());
  s.setValue("prompt/text", prompt_->toPlainText());
}

void MainWindow::closeEvent(QCloseEvent* event) {
  save_settings();
  QMainWindow::closeEvent(event);
}

void MainWindow::remember_recent(const QString& path) {
  if (!remember_settings_) return;
  QSettings s = settings();
  QStringList recent = s.value("models/recent").toStringList();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > kMaxRecent) recent.removeLast();
  s.setValue("models/recent", recent);
}

void MainWindow::fill_model_picker() {
  const QString bundled = QString::fromStdString(cli::default_model_path());
  std::vector<QString> timing_paths;
  for (const TimingModel& m : timing_models_) {
    timing_paths.push_back(timing_model_path(timing_folder_, m));
  }
  const auto is_timing = [&](const QString& p) {
    return std::find(timing_paths.begin(), timing_paths.end(), p) != timing_paths.end();
  };
  QStringList paths = {bundled};
  if (remember_settings_) {
    for (const QString& p : settings().value("models/recent").toStringList()) {
      if (!paths.contains(p) && !is_timing(p) && QFileInfo::exists(p)) paths.append(p);
    }
  }
  if (!model_path_.isEmpty() && !paths.contains(model_path_) && !is_timing(model_path_)) {
    paths.append(model_path_);
  }
  model_picker_->clear();
  for (const QString& p : paths) {
    model_picker_->addItem(p == bundled ? QString("%1 (bundled)").arg(QFileInfo(p).fileName())
                                        : QFileInfo(p).fileName(),
                           p);
    model_picker_->setItemData(model_picker_->count() - 1, p, Qt::ToolTipRole);
  }
  model_picker_->addItem("Open GGUF...", kOpenItem);
  // The timing models, under a heading that cannot be chosen.
  model_picker_->insertSeparator(model_picker_->count());
  model_picker_->addItem(kTimingGroup);
  const int heading = model_picker_->count() - 1;
  if (auto* items = qobject_cast<QStandardItemModel*>(model_picker_->model())) {
    items->item(heading)->setEnabled(false);
  }
  const QString tooltip = timing_tooltip(timing_folder_);
  model_picker_->setItemData(heading, tooltip, Qt::ToolTipRole);
  for (size_t i = 0; i < timing_models_.size(); ++i) {
    model_picker_->addItem("  " + timing_model_title(timing_models_[i], bundled_vocab_),
                           timing_paths[i]);
    const int row = model_picker_->count() - 1;
    model_picker_->setItemData(row, static_cast<uint>(i), kTimingRole);
    model_picker_->setItemData(row, tooltip, Qt::ToolTipRole);
  }
  // Nothing chosen (the placeholder shows) while no model is loaded.
  model_picker_->setCurrentIndex(model_path_.isEmpty() ? -1 : model_picker_->findData(model_path_));
}

void MainWindow::add_timing_models(QMenu* menu) {
  menu->setObjectName("timing-models-menu");
  menu->setToolTipsVisible(true);
  menu->setToolTip(timing_tooltip(timing_folder_));
  for (const TimingModel& m : timing_models_) {
    QAction* action = menu->addAction(timing_model_title(m, bundled_vocab_), this,
                                      [this, m] { open_timing_model(m); });
    action->setToolTip(timing_tooltip(timing_folder_));
  }
}

void MainWindow::fill_backend_picker() {
  const compute::DeviceList devices = compute::list_devices();
  backend_picker_->clear();
  backend_picker_->addItem("CPU (OpenBLAS)", -1);
  backend_picker_->setItemData(
      0,
      QString("%1, %2 cores. On a laptop without a GPU the CPU backend is faster than Vulkan on "
              "lavapipe.")
          .arg(QString::fromStdString(devices.cpu.model_name))
          .arg(devices.cpu.cores),
      Qt::ToolTipRole);
  const std::optional<uint32_t> default_gpu = compute::default_vulkan_device(devices);
  if (!default_gpu) backend_picker_->setItemData(0, true, kDefaultBackendRole);
  for (const compute::vulkan::DeviceDescription& d : devices.vulkan) {
    if (!d.has_compute_queue) continue;
    const QString name = QString::fromStdString(d.name);
    backend_picker_->addItem(compute::runs_on_the_cpu(d)
                                 ? QString("Vulkan on the CPU (software): %1").arg(name)
                                 : QString("Vulkan %1: %2").arg(d.index).arg(name),
                             static_cast<int>(d.index));
    if (default_gpu == d.index) {
      backend_picker_->setItemData(backend_picker_->count() - 1, true, kDefaultBackendRole);
    }
    backend_picker_->setItemData(
        backend_picker_->count() - 1,
        QString("%1 device, driver %2 %3%4")
            .arg(QString::fromStdString(d.type), QString::fromStdString(d.driver_name),
                 QString::fromStdString(d.driver_info),
                 compute::runs_on_the_cpu(d)
                     ? ". It runs on the CPU cores: the CPU backend is usually faster"
                     : ""),
        Qt::ToolTipRole);
  }
}

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
                 QString("Writing the %1 %2 timing model").arg(model.label, model.type.toUpper()));
  } else {
    work_->start(WorkProgress::Task::kLoad, loading_what(path));
  }
  engine_->open_timing_model(model, path, backend_);
}

void MainWindow::set_backend(const BackendChoice& backend) {
  open_model_on(model_path_.isEmpty() ? QString::fromStdString(cli::default_model_path())
                                      : model_path_,
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

void MainWindow::forget_cached_prefixes() {
  prefill_timer_->stop();  // a pending typing prefill would cache the prompt again
  engine_->forget_cached_prefixes();
}

void MainWindow::set_max_tokens(int count) { max_tokens_->setValue(count); }

void MainWindow::set_continuous_classmates(bool continuous) {
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

void MainWindow::set_keep_kv(bool keep) {
  engine_->set_keep_kv(keep);
}

void MainWindow::set_batching(const BatchingChoice& batching) {
  const QSignalBlocker block(batch_wait_);  // one message to the worker, not two
  batching_picker_->setCurrentIndex(batching.static_batches ? 1 : 0);
  batch_wait_->setValue(batching.wait_ms);
  send_batching();
}

BatchingChoice MainWindow::batching() const {
  return BatchingChoice{batching_picker_->currentData().toBool(), batch_wait_->value()};
}

void MainWindow::send_batching() {
  engine_->set_batching(batching());
}

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
  prefill_timer_->stop();
  prompt_chips_->set_pending_from(-1);
  output_chips_->clear_tokens();
  show_message({}, false);
  engine_->generate(prompt_->toPlainText());
  update_actions();
}

void MainWindow::stop() {
  if (sweeping()) stop_batch_sweep();
  if (generating()) engine_->stop();
}

void MainWindow::show_model_details() {
  if (!engine_info()) return;
  QMessageBox box(QMessageBox::NoIcon, "Model details", model_details_html(*engine_info()),
                  QMessageBox::Close, this);
  box.setTextFormat(Qt::RichText);
  box.setTextInteractionFlags(Qt::TextSelectableByMouse);
  box.exec();
}

void MainWindow::stop_batch_sweep() {
  if (!sweeping()) return;
  engine_->stop_sweep();
  statusBar()->showMessage("Stopping the batch sweep...");
}

void MainWindow::step() {
  if (player_) return player_->step();
  engine_->step_once();
}

void MainWindow::sweep_batch_sizes() {
  if (sweeping()) return;
  engine_->run_batch_sweep();
  update_actions();
  statusBar()->showMessage("Sweeping batch sizes 1 to 16 (Esc stops)...");
  work_->start(WorkProgress::Task::kBatchSweep, "Sweeping batch sizes 1 to 16");
  show_panel(PanelId::kBatching);
}

void MainWindow::run_staggered_load(const StaggeredLoad& load) {
  if (sweeping()) return;
  engine_->run_staggered_load(load);
  update_actions();
  statusBar()->showMessage(QString("Staggered load: %1 requests arriving at %2 per second "
                                   "(Esc stops)...")
                               .arg(load.clients)
                               .arg(load.rate_per_s));
  work_->start(WorkProgress::Task::kStaggeredLoad, QString("Staggered load, %1: %2 requests")
                                                       .arg(batching_text(load.batching))
                                                       .arg(load.clients));
}

void MainWindow::show_panel(PanelId panel) { tabs_->setCurrentIndex(static_cast<int>(panel)); }

void MainWindow::start_pending_quant_lab() {
  if (quant_lab_pending_ && current_panel() == PanelId::kQuantisation) {
    compare_quantisation(quant_types_);
  }
}

PanelId MainWindow::current_panel() const {
  return kAllPanels[static_cast<size_t>(std::clamp(tabs_->currentIndex(), 0, 5))];
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
  const bool ready = engine_info().has_value() && !player_;  // a replay runs no engine
  generate_action_->setEnabled(ready && !generating());
  stop_action_->setEnabled(generating() || sweeping());
  step_action_->setEnabled(ready && engine_->state().running);
  sweep_action_->setEnabled(ready && !sweeping());
}

// --- what the engine reports ------------------------------------------------------------

void MainWindow::on_engine_ready(const EngineInfo& info) {
  // Records of the engine being replaced are folded first, so nothing is lost or mixed.
  on_frame();
  const QString served = info.model_path + "|" + info.backend;
  const bool new_model = served != std::exchange(served_, served);
  queue_ = info.telemetry;  // the frame pump drains the new engine from here on
  model_path_ = info.model_path;
  work_->finish(WorkProgress::Task::kLoad);
  work_->finish(WorkProgress::Task::kWeights);
  if (new_model) {
    cancel_quantisation();  // the replaced model's comparison, if one runs
    quant_lab_.reset();
    quant_run_ = {};
    quant_lab_changed_ = true;
    quant_lab_pending_ = !info.random_weights;  // a random-weight model's variants compare noise
    if (info.random_weights) {
      // Its variants would compare noise, and the lab's work would slow the timing.
      show_message(
          "A timing model: its weights are random, so its speed and memory are real and its "
          "text is meaningless. The quantisation lab does not run on it; load a trained model "
          "for the Quantisation panel.",
          false);
    } else {
      start_pending_quant_lab();
    }
  }
  backend_ = loaded_backend(info, backend_);
  update_activations_picker();
  folder_.reset(FoldFacts{info.kv_blocks, info.block_size, info.kv_bytes_per_block});
  // The client forgot the user's request (a new engine numbers its requests from 0 again:
  // the old id named its typed prompt's prefill or a classmate), the sweep and the load.
  attention_ = {};
  attention_seen_ = 0;
  panels_->reset_counts();
  panels_->reset_views();
  remember_recent(info.model_path);
  show_loaded_in_pickers();
  show_random_weights(info.random_weights);
  on_prompt_edited();
  update_status();
  update_actions();
  Q_EMIT engine_ready(info);
}

void MainWindow::on_load_failed(const QString& message, bool serving) {
  for (const auto task : {WorkProgress::Task::kTimingModel, WorkProgress::Task::kLoad,
                          WorkProgress::Task::kWeights}) {
    work_->finish(task);
  }
  if (serving && engine_info()) {
    backend_ = loaded_backend(*engine_info(), backend_);
    update_activations_picker();
  } else {
    forget_engine();
  }
  show_loaded_in_pickers();
  on_failed(message);
}

void MainWindow::forget_engine() {
  on_frame();  // the last records of the engine that is gone
  queue_.reset();
  served_.clear();
  model_path_.clear();
  cancel_quantisation();
  quant_lab_.reset();
  quant_run_ = {};
  quant_lab_pending_ = false;
  status_random_->setVisible(false);
  setWindowTitle("ServeScope");
  for (QLabel* label : {status_device_, status_kv_, status_rate_, status_batching_}) {
    label->clear();
  }
  status_model_->setText("No model loaded");
  update_actions();
}

// The pickers show what the engine runs, or nothing where no model is loaded.
void MainWindow::show_loaded_in_pickers() {
  fill_model_picker();
  if (!engine_info()) {
    backend_picker_->setCurrentIndex(-1);
    return;
  }
  const EngineInfo& info = *engine_info();
  const int backend_index =
      backend_picker_->findData(info.backend == "vulkan" ? info.vulkan_device : -1);
  if (backend_index >= 0) backend_picker_->setCurrentIndex(backend_index);
  const int weights_index = weights_picker_->findData(info.weight_type);
  if (weights_index >= 0) weights_picker_->setCurrentIndex(weights_index);
  const int kv_index = kv_picker_->findData(static_cast<int>(info.kv_type));
  if (kv_index >= 0) kv_picker_->setCurrentIndex(kv_index);
}

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
      random
          ? QString("ServeScope - %1 (%2)").arg(name_without_note(engine_info()->model_name), note)
          : QString("ServeScope"));
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
    show_message(QString("Prompt: %1").arg(error.what()), true);
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
    show_message(QString("The prompt is %1 tokens; the model's context holds %2.")
                     .arg(chips.size())
                     .arg(engine_info()->context_length),
                 true);
  }
  if (!generating()) prefill_timer_->start();
}

// --- the frame ------------------------------------------------------------------------------

void MainWindow::on_frame() {
  const double now = static_cast<double>(clock_.nsecsElapsed()) / 1e6;
  if (sender() == frame_timer_) {
    if (last_frame_ms_ >= 0.0) frame_stats_.add(now - last_frame_ms_);
    last_frame_ms_ = now;
  }
  if (!queue_) return;
  // What this frame costs the GUI thread: draining, folding, snapshots (painting follows).
  struct WorkTimer {
    MainWindow& w;
    double start_ms;
    bool counted;
    ~WorkTimer() {
      if (counted) w.frame_work_.add(static_cast<double>(w.clock_.nsecsElapsed()) / 1e6 - start_ms);
    }
  } work_timer{*this, now, sender() == frame_timer_};
  const std::vector<telemetry::TelemetryItem> items = queue_->drain();
  if (recorder_) recorder_->record_telemetry(items, now);
  if (!items.empty()) folder_.fold(items, now);
  PanelMask changed = folder_.take_changed();
  if (!engine_info()) return;  // the engine is gone: its last records are folded
  const EngineState& engine = engine_->state();
  if (engine.info->attention) {
    if (auto sample = engine.info->attention->take_newer(attention_seen_)) {
      attention_ = std::move(*sample);
      changed |= panel_bit(PanelId::kAttention);
    }
  }
  if (std::exchange(shown_info_revision_, engine.info_revision) != engine.info_revision) {
    changed |= panel_bit(PanelId::kKvCache);  // memory measured
  }
  if (std::exchange(shown_sweep_revision_, engine.sweep_revision) != engine.sweep_revision) {
    changed |= panel_bit(PanelId::kBatching);
  }
  if (quant_lab_changed_) {
    quant_lab_changed_ = false;
    changed |= panel_bit(PanelId::kQuantisation);
  }
  if (std::exchange(shown_collecting_revision_, engine.collecting_revision) !=
      engine.collecting_revision) {
    changed |= panel_bit(PanelId::kBatching);
  }
  if (const Speed pace = speed(); pace != panels_speed_) {  // their "times are real" note
    panels_speed_ = pace;
    changed |= panel_bit(PanelId::kBatching) | panel_bit(PanelId::kPhases);
  }
  panels_->refresh(PanelFeed{folder_, *engine.info, now, &attention_,
                             quant_lab_ ? &*quant_lab_ : nullptr, &quant_run_, quant_types_,
                             &engine.batch_sweep, collecting_status(), &quant_limits_, panels_speed_},
                   changed);
  update_generated_chips();
  update_kv_status();
  if (now - last_status_ms_ >= kStatusEveryMs) {
    last_status_ms_ = now;
    update_status();
    if (overlay_->isVisible()) update_overlay();
  }
}

void MainWindow::update_generated_chips() {
  // The user's tokens, with their probabilities, as the engine reported them.
  if (folder_.watched_request() != user_request() || !engine_info()->tokenizer) return;
  const std::vector<telemetry::TokenRecord>& records = folder_.watched_tokens();
  const auto shown = static_cast<size_t>(output_chips_->tokens().size());
  if (records.size() <= shown) return;
  const Tokenizer& tokenizer = *engine_info()->tokenizer;
  QVector<GeneratedToken> fresh;
  for (size_t i = shown; i < records.size(); ++i) {
    const telemetry::TokenRecord& r = records[i];
    GeneratedToken token;
    token.id = r.id;
    token.text = token_display_text(tokenizer, r.id);
    token.probability = r.prob;
    for (const telemetry::TokenAlternative& a : r.top) {
      token.alternatives.push_back({token_display_text(tokenizer, a.id), a.prob});
    }
    fresh.push_back(token);
  }
  output_chips_->append_tokens(fresh);
}

// Every frame, with the panels: the KV cache panel's heading and this text read the same
// folder state, so they never show two figures for the bytes held.
void MainWindow::update_kv_status() {
  if (!engine_info()) return;
  const QString text =
      engine_info()->keep_kv
          ? QString("KV %1: %2 / %3")
                .arg(kv_type_label(engine_info()->kv_type), bytes_text(folder_.kv_bytes_used()),
                     bytes_text(engine_info()->kv_bytes_total))
          : QString("KV cache off: every token recomputes its context");
  if (status_kv_->text() != text) status_kv_->setText(text);  // no relayout when unchanged
}

void MainWindow::update_status() {
  if (!engine_info()) return;
  const EngineInfo& info = *engine_info();
  const double now = static_cast<double>(clock_.nsecsElapsed()) / 1e6;
  status_device_->setText(device_label(info));
  status_device_->setToolTip(device_tooltip(info));
  status_model_->setText(
      QString("%1%2: %3 parameters, %4")
          .arg(name_without_note(info.model_name),
               info.weight_type.isEmpty() ? QString() : " as " + info.weight_type.toUpper())
          .arg(count_text(info.parameters))
          .arg(bytes_text(info.weight_bytes)));
  status_model_->setToolTip(
      QString("The model, its parameter count (%1) and the bytes of its weights\n%2")
          .arg(QLocale::system().toString(static_cast<qlonglong>(info.parameters)),
               info.provenance));
  update_kv_status();
  const QString collecting = collecting_status();
  status_batching_->setText(batching_text(info.batching) +
                            (collecting.isEmpty() ? QString() : ": " + collecting));
  status_rate_->setText(
      QString("%1 tokens/s").arg(QLocale::system().toString(folder_.tokens_per_s(now), 'f', 0)));
}

void MainWindow::update_overlay() {
  const telemetry::TelemetryQueue* queue =
      queue_ ? queue_.get() : nullptr;
  overlay_->setText(QString("frame p50 %1 ms  p99 %2 ms  (%3 frames)\n"
                            "GUI work per frame p50 %6 ms  p99 %7 ms\n"
                            "steps %4  records dropped %5")
                        .arg(frame_stats_.p50(), 0, 'f', 1)
                        .arg(frame_stats_.p99(), 0, 'f', 1)
                        .arg(frame_stats_.count())
                        .arg(folder_.counts().steps)
                        .arg(queue ? queue->dropped() : 0)
                        .arg(frame_work_.p50(), 0, 'f', 2)
                        .arg(frame_work_.p99(), 0, 'f', 2));
  overlay_->adjustSize();
  overlay_->move(tabs_->width() - overlay_->width() - 8, 32);
  overlay_->raise();
}

void MainWindow::apply_theme() {
  widgets::set_theme(dark_ ? widgets::ThemeKind::kDark : widgets::ThemeKind::kLight,
                     high_contrast_);
  const widgets::Theme& theme = widgets::theme();
  QPalette palette;
  palette.setColor(QPalette::Window, theme.surface);
  palette.setColor(QPalette::WindowText, theme.text);
  palette.setColor(QPalette::Base, theme.background);
  palette.setColor(QPalette::AlternateBase, theme.surface);
  palette.setColor(QPalette::Text, theme.text);
  palette.setColor(QPalette::Button, theme.surface);
  palette.setColor(QPalette::ButtonText, theme.text);
  palette.setColor(QPalette::ToolTipBase, theme.surface);
  palette.setColor(QPalette::ToolTipText, theme.text);
  palette.setColor(QPalette::PlaceholderText, theme.muted_text);
  palette.setColor(QPalette::Highlight, theme.highlight);
  palette.setColor(QPalette::Disabled, QPalette::Text, theme.muted_text);
  palette.setColor(QPalette::Disabled, QPalette::ButtonText, theme.muted_text);
  palette.setColor(QPalette::Disabled, QPalette::WindowText, theme.muted_text);
  QApplication::setPalette(palette);
  for (QWidget* w : findChildren<QWidget*>()) w->update();
  show_message(message(), message_is_error_);
  if (engine_info()) show_random_weights(engine_info()->random_weights);  // in the theme's colour
}

}  // namespace servescope::gui
