// servescope: the desktop application. See gui_options.h for the command line.
#include <QApplication>
#include <QStyleFactory>
#include <cstdio>
#include <memory>

#include "app/gui/demo_runner.h"
#include "app/gui/gui_options.h"
#include "app/gui/main_window.h"
#include "engine/compute/backend.h"

int main(int argc, char** argv) {
  using namespace servescope::gui;
  QApplication app(argc, argv);
  QApplication::setApplicationName("ServeScope");
  QApplication::setOrganizationName("ServeScope");
  QApplication::setStyle(QStyleFactory::create("Fusion"));

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
  if (options.reset) MainWindow::forget_settings();

  WindowOptions window_options;
  window_options.remember_settings = !options.demo_prompt.has_value();
  if (options.model) window_options.model = QString::fromStdString(*options.model);
  if (options.backend || options.device) {
    const bool vulkan = options.backend ? *options.backend == "vulkan" : true;
    window_options.backend = BackendChoice{
        vulkan ? servescope::compute::BackendKind::kVulkan : servescope::compute::BackendKind::kCpu,
        vulkan ? options.device.value_or(-1) : -1};
  }
  if (options.theme) window_options.dark_theme = *options.theme == ThemeChoice::kDark;

  MainWindow window(window_options);
  if (options.demo_prompt) {
    window.resize(1600, 1000);
    DemoPlan plan;
    plan.prompt = QString::fromStdString(*options.demo_prompt);
    plan.clients = options.clients;
    plan.panel = options.panel;
    if (options.screenshot) plan.screenshot = QString::fromStdString(*options.screenshot);
    plan.after_ms = options.after_ms;
    plan.sweep = options.sweep;
    new DemoRunner(window, plan);  // owned by the window
  }
  window.show_overlay(options.overlay);
  window.show();
  return QApplication::exec();
}
