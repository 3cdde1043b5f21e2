// Shared by the GUI tests: one offscreen QApplication for the whole test binary, and waiting
// for the engine's thread while the GUI thread keeps processing events.
#pragma once

#include <QApplication>
#include <QElapsedTimer>
#include <QThread>
#include <string>

namespace servescope::gui::testing {

inline QApplication& app() {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  static int argc = 1;
  static char name[] = "gui_test";
  static char* argv[] = {name, nullptr};
  static QApplication application(argc, argv);
  return application;
}

// Processes events until pred() holds; false after timeout_ms.
template <typename Pred>
bool wait_until(Pred pred, int timeout_ms = 120000) {
  QElapsedTimer timer;
  timer.start();
  while (!pred()) {
    if (timer.elapsed() > timeout_ms) return false;
    QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
    QThread::msleep(1);
  }
  return true;
}

inline const std::string kTestData = SERVESCOPE_TEST_DATA_DIR;

}  // namespace servescope::gui::testing
