// Shared by the GUI tests: the test binary's QApplication, and waiting for the engine's
// thread while the GUI thread keeps processing events.
#pragma once

#include <QApplication>
#include <QElapsedTimer>
#include <QThread>
#include <string>

#include "app/gui/timing_models.h"

namespace servescope::gui::testing {

// The application gui_test_main.cpp made.
inline QApplication& app() { return *qobject_cast<QApplication*>(QCoreApplication::instance()); }

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

// A timing model of a tiny shape, through the same path as the menus' 25M to 1B presets.
inline TimingModel tiny_timing_model() {
  // dim 64, 2 layers, 2 heads sharing 1 KV head, ffn 192, context 128.
  return TimingModel{"test-tiny", eval::RandomModelShape{64, 2, 2, 1, 192, 128}, "q4_0"};
}

}  // namespace servescope::gui::testing
