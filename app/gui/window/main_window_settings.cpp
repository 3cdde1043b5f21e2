// The window's settings: restored at start (the table of remembered controls, the window's
// geometry, the model and backend), saved at close, and forgotten by --reset.
#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QFileInfo>
#include <QPlainTextEdit>
#include <QScreen>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
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
#include "app/gui/window/app_settings.h"
#include "app/gui/window/main_window.h"
#include "app/gui/window/model_picker.h"
#include "app/gui/window/settled_choice.h"
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

// Not translated: it is the model's input, and the bundled model knows English only.
constexpr const char* kSuggestedPrompt = "Once upon a time";

// Why the settings cannot be kept, or empty. QSettings itself says nothing when its file is a
// folder: it reads nothing and writes nothing.
QString settings_problem() {
  QSettings s = app_settings();
  const QFileInfo file(s.fileName());
  if (file.exists() && !file.isFile()) {
    return QCoreApplication::translate(
               "MainWindow",
               "Settings cannot be read or saved: %1 is a folder, not a file. Move it aside "
               "for ServeScope to remember your settings.")
        .arg(s.fileName());
  }
  s.sync();
  if (s.status() == QSettings::AccessError) {
    return QCoreApplication::translate("MainWindow",
                                       "Settings cannot be read or saved: %1 is not accessible.")
        .arg(s.fileName());
  }
  if (s.status() == QSettings::FormatError) {
    return QCoreApplication::translate(
               "MainWindow",
               "Settings cannot be read: %1 is not a settings file; they start afresh.")
        .arg(s.fileName());
  }
  return {};
}

}  // namespace

void MainWindow::forget_settings() { app_settings().clear(); }

void MainWindow::restore_settings(const WindowOptions& options) {
  QString model = QString::fromStdString(cli::default_model_path());
  std::optional<BackendChoice> backend;
  bool dark = false;
  bool q8_activations = false;  // remembered apart from the backend, which options may name
  if (remember_settings_) {
    QSettings s = app_settings();
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
    quant_lab_->restore(s);
    // Before version 2 the first run chose any Vulkan device, lavapipe included, and that
    // choice was remembered as if made; those settings start from the new default.
    if (s.value("settings/version", 1).toInt() >= 2 && s.contains("engine/backend")) {
      backend = backend_choice_of(s.value("engine/backend").toString() == "vulkan"
                                      ? compute::BackendKind::kVulkan
                                      : compute::BackendKind::kCpu,
                                  s.value("engine/device", -1).toInt());
    }
    // Spin boxes clamp to their ranges; a change reaches the engine through valueChanged.
    settings_table_.restore(s);
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
    backend = device < 0 ? backend_choice_of(compute::BackendKind::kCpu)
                         : backend_choice_of(compute::BackendKind::kVulkan, device);
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
  model_picker_->show_loaded(model_path_);
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
  QSettings s = app_settings();
  s.setValue("window/geometry", saveGeometry());
  s.setValue("window/state", saveState());
  if (auto* splitter = findChild<QSplitter*>("main-splitter")) {
    s.setValue("window/splitter", splitter->saveState());
  }
  s.setValue("settings/version", 2);
  // A model still loading at quit is the one asked for last (a lesson's engine given back).
  s.setValue("engine/model", loading() ? engine_->state().loading_path : model_path_);
  s.setValue("engine/backend", backend_.kind == compute::BackendKind::kVulkan ? "vulkan" : "cpu");
  s.setValue("engine/device", device_index(backend_));
  settings_table_.save(s);
  s.setValue("engine/activations", backend_.quantised_activations ? "q8_0" : "f32");
  quant_lab_->save(s);
  s.setValue("view/dark", dark_);
  s.setValue("view/font_size", QApplication::font().pointSizeF());
  s.setValue("prompt/text", prompt_->toPlainText());
}

void MainWindow::closeEvent(QCloseEvent* event) {
  save_settings();
  QMainWindow::closeEvent(event);
}

}  // namespace servescope::gui
