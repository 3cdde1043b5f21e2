// servescope: the desktop application. See gui_options.h for the command line.
#include <QApplication>
#include <QStyleFactory>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "app/common/data_files.h"
#include "app/gui/lesson_ui/lab_report_file.h"
#include "app/gui/lesson_ui/lesson_run.h"
#include "app/gui/recording/trace_file.h"
#include "app/gui/window/demo_runner.h"
#include "app/gui/window/gui_options.h"
#include "app/gui/window/main_window.h"
#include "app/gui/window/termination.h"
#include "app/gui/window/translations.h"
#include "app/lessons/lesson_set.h"
#include "engine/compute/backend.h"
#include "engine/core/error.h"

namespace {

// QApplication aborts when it finds no display; say why in one line instead, before it starts.
bool can_open_a_window() {
  for (const char* name : {"QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return true;
  }
  return false;
}

bool asks_for(int argc, char** argv, const char* option) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], option) == 0) return true;
  }
  return false;
}

bool asks_for_help(int argc, char** argv) {
  return asks_for(argc, argv, "--help") || asks_for(argc, argv, "-h");
}

// `--check-lessons [DIR]`: validates lesson files for their authors; no window, no QApplication.
std::optional<int> check_lessons_if_asked(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (std::find(args.begin(), args.end(), "--check-lessons") == args.end()) return std::nullopt;
  using namespace servescope;
  gui::GuiOptions options;
  try {
    options = gui::parse_gui_options(args);
  } catch (const gui::GuiUsageError& error) {
    std::fprintf(stderr, "servescope: %s\n", error.what());
    return 2;
  }
  const std::filesystem::path dir = options.check_lessons->empty()
                                        ? app::bundled_lessons_path()
                                        : std::filesystem::path(*options.check_lessons);
  // Generated questions are computed on the bundled model when it is there.
  std::optional<lessons::ModelFacts> model;
  try {
    model = lessons::model_facts(app::bundled_model_path());
  } catch (const servescope::Error&) {
    model.reset();  // checked against their parameters only
  }
  return lessons::check_lessons(dir, model ? &*model : nullptr, std::cout, std::cerr);
}

// `--run-lessons`: the window runs its lessons' experiments headless, where Qt draws offscreen
// unless told otherwise; the CPU backend and the bundled model, nothing remembered.
int run_lessons(const servescope::gui::GuiOptions& options) {
  using namespace servescope::gui;
  WindowOptions window_options;
  window_options.remember_settings = false;
  window_options.backend = BackendChoice(servescope::compute::BackendKind::kCpu);
  window_options.model = QString::fromStdString(servescope::app::bundled_model_path().string());
  LessonRunPlan plan;
  plan.folder = options.run_lessons->empty() ? servescope::app::bundled_lessons_path()
                                             : std::filesystem::path(*options.run_lessons);
  window_options.lessons_folder = QString::fromStdString(plan.folder.string());
  plan.lessons = options.lesson_ids;
  plan.json = options.json;
  MainWindow window(window_options);
  new LessonRun(window, plan, std::cout, std::cerr);  // owned by the window
  return QApplication::exec();
}

// `--export-report FILE.html`: the lab report from the learner's progress file, on the
// installed lessons and the bundled model; no window (Qt lays the document out offscreen).
int export_report(const servescope::gui::GuiOptions& options) {
  using namespace servescope;
  try {
    const lessons::ModelFacts model = lessons::model_facts(app::bundled_model_path());
    const lessons::LessonSet set = lessons::load_lesson_set(app::bundled_lessons_path(), &model);
    lessons::ProgressStore store(lessons::default_progress_folder());
    const lessons::ProgressStore::Loaded loaded = store.load();
    if (!loaded.notice.isEmpty()) std::fprintf(stderr, "servescope: %s\n", qPrintable(loaded.notice));
    const QString html = QString::fromStdString(*options.export_report);
    gui::write_lab_report(lessons::build_lab_report(loaded.progress, set.usable(), &model,
                                                    gui::lab_report_facts(&model)),
                          html);
    std::printf("servescope: wrote %s and %s\n", qPrintable(html),
                qPrintable(gui::lab_report_pdf_path(html)));
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "servescope: --export-report: %s\n", error.what());
    return 1;
  }
}

// --record and --replay: the trace to write, or the recorded run to play (read whole and
// checked before the window opens). False after saying why in one line.
bool open_traces(const servescope::gui::GuiOptions& options,
                 servescope::gui::WindowOptions& window_options) {
  using namespace servescope::gui;
  try {
    if (options.record) {
      window_options.record = std::make_shared<TraceWriter>(
          *options.record, TraceHeader{kTraceVersion, trace_time_now()});
    }
    if (options.replay) {
      window_options.replay = std::make_shared<const Trace>(read_trace(*options.replay));
      window_options.replay_speed = options.replay_speed;
    }
  } catch (const TraceError& error) {
    std::fprintf(stderr, "servescope: %s %s\n", options.record ? "--record" : "--replay",
                 error.what());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace servescope::gui;
  if (const std::optional<int> status = check_lessons_if_asked(argc, argv)) return *status;
  const bool headless = asks_for(argc, argv, "--run-lessons") ||
                        asks_for(argc, argv, "--export-report");
  if (headless && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
    qputenv("QT_QPA_PLATFORM", "offscreen");  // headless: no window is shown
  }
  if (asks_for_help(argc, argv)) {
    std::fputs(gui_usage().c_str(), stdout);
    return 0;
  }
  if (!can_open_a_window()) {
    std::fputs(
        "servescope: no display to open the window on (DISPLAY and WAYLAND_DISPLAY are unset); "
        "start it from a desktop session, under xvfb-run, or with QT_QPA_PLATFORM=offscreen for "
        "--demo --screenshot (servescope-cli needs no display)\n",
        stderr);
    return 2;
  }
  QApplication app(argc, argv);
  QApplication::setApplicationName("ServeScope");
  QApplication::setOrganizationName("ServeScope");
  QApplication::setStyle(QStyleFactory::create("Fusion"));
  // Before any window or dialog is made: widgets take their words' translation when built.
  install_translators(
      app, QLocale(),
      QString::fromStdString((servescope::app::data_directory() / "translations").string()));

  std::vector<std::string> args;
  for (const QString& arg : QApplication::arguments().mid(1)) args.push_back(arg.toStdString());
  GuiOptions options;
  try {
    options = parse_gui_options(args);
  } catch (const GuiUsageError& error) {
    std::fprintf(stderr, "servescope: %s\n", error.what());
    return 2;
  }
  if (options.help) {
    std::fputs(gui_usage().c_str(), stdout);
    return 0;
  }
  if (options.run_lessons) return run_lessons(options);
  if (options.export_report) return export_report(options);
  if (options.reset) MainWindow::forget_settings();

  WindowOptions window_options;
  // The demo and a replay leave the learner's settings as they were.
  window_options.remember_settings = !options.demo_prompt && !options.replay;
  if (options.model) window_options.model = QString::fromStdString(*options.model);
  if (options.backend || options.device) {
    const bool vulkan = options.backend ? *options.backend == "vulkan" : true;
    window_options.backend = backend_choice_of(
        vulkan ? servescope::compute::BackendKind::kVulkan : servescope::compute::BackendKind::kCpu,
        vulkan ? options.device.value_or(-1) : -1);
  }
  if (options.theme) window_options.dark_theme = *options.theme == ThemeChoice::kDark;
  window_options.static_batching = options.static_batching;
  window_options.batch_wait_ms = options.batch_wait_ms;
  window_options.quantised_activations = options.quantised_activations;
  if (options.remote) window_options.remote = QUrl(QString::fromStdString(*options.remote));
  if (!open_traces(options, window_options)) return 2;

  MainWindow window(window_options);
  if (options.demo_prompt || options.replay) {
    window.resize(1600, 1000);
    DemoPlan plan;
    plan.replay = options.replay.has_value();
    plan.remote = options.remote.has_value();
    plan.prompt = QString::fromStdString(options.demo_prompt.value_or(""));
    plan.classmates = options.classmates;
    plan.samples = options.samples;
    plan.panel = options.panel;
    if (options.screenshot) plan.screenshot = QString::fromStdString(*options.screenshot);
    plan.after_ms = options.after_ms;
    plan.sweep = options.sweep;
    plan.here_and_there = options.here_and_there;
    const auto text = [](const std::optional<std::string>& s) -> std::optional<QString> {
      if (!s) return std::nullopt;
      return QString::fromStdString(*s);
    };
    plan.lesson = text(options.lesson);
    plan.step = options.step;
    plan.run_step = options.run_step;
    plan.learn_tab = text(options.learn_tab);
    plan.question = options.question;
    plan.answer = text(options.answer);
    plan.lecture = options.lecture;
    if (options.quant_types) {
      plan.quant_types = QString::fromStdString(*options.quant_types).split(',');
    }
    plan.quant_block = text(options.quant_block);
    new DemoRunner(window, plan);  // owned by the window
  }
  window.show_overlay(options.overlay);
  window.show();
  new TerminationCloser(window);  // owned by the window
  return QApplication::exec();
}
