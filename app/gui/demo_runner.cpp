#include "app/gui/demo_runner.h"

#include <QApplication>
#include <QScreen>
#include <QTimer>
#include <cstdio>

#include "app/gui/main_window.h"

namespace servescope::gui {

DemoRunner::DemoRunner(MainWindow& window, DemoPlan plan)
    : QObject(&window), window_(window), plan_(std::move(plan)) {
  connect(&window_, &MainWindow::engine_ready, this, [this] {
    if (!started_) start();
  });
  connect(&window_, &MainWindow::failed, this, [this](const QString& message) {
    if (!started_) fail(message);  // the demo's model could not be loaded
  });
}

void DemoRunner::start() {
  started_ = true;
  window_.set_classmates(plan_.clients);
  window_.set_continuous_classmates(true);  // the engine stays busy until the screenshot
  window_.set_prompt(plan_.prompt);
  if (plan_.panel) window_.show_panel(*plan_.panel);
  window_.generate();
  if (plan_.screenshot) {  // without one the demo stays open, as a lecture would use it
    QTimer::singleShot(plan_.after_ms, this, &DemoRunner::finish);
  }
}

void DemoRunner::finish() {
  if (!plan_.screenshot) {
    QApplication::exit(0);
    return;
  }
  const QPixmap shot = window_.grab();
  if (shot.isNull() || !shot.save(*plan_.screenshot, "PNG")) {
    fail(QString("could not write the screenshot %1").arg(*plan_.screenshot));
    return;
  }
  std::fprintf(stderr,
               "servescope: wrote %s (%dx%d); frame time p50 %.1f ms, p99 %.1f ms over "
               "%zu frames\n",
               plan_.screenshot->toLocal8Bit().constData(), shot.width(), shot.height(),
               window_.frame_stats().p50(), window_.frame_stats().p99(),
               window_.frame_stats().count());
  QApplication::exit(0);
}

void DemoRunner::fail(const QString& reason) {
  std::fprintf(stderr, "servescope: %s\n", reason.simplified().toLocal8Bit().constData());
  QApplication::exit(1);
}

}  // namespace servescope::gui
