// Shared by the GUI tests: the test binary's QApplication, and waiting for the engine's
// thread while the GUI thread keeps processing events.
#pragma once

#include <QApplication>
#include <QElapsedTimer>
#include <QThread>
#include <memory>
#include <string>

#include "app/gui/engine_bridge/timing_models.h"
#include "engine/compute/backend.h"
#include "engine/compute/roofs.h"

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

// XDG_CACHE_HOME for one test: the roofs cached per device go into a folder of its own.
class ScopedCacheHome {
 public:
  explicit ScopedCacheHome(const QString& folder)
      : had_(qEnvironmentVariableIsSet("XDG_CACHE_HOME")), saved_(qgetenv("XDG_CACHE_HOME")) {
    qputenv("XDG_CACHE_HOME", folder.toLocal8Bit());
  }
  ~ScopedCacheHome() {
    if (had_) {
      qputenv("XDG_CACHE_HOME", saved_);
    } else {
      qunsetenv("XDG_CACHE_HOME");
    }
  }
  ScopedCacheHome(const ScopedCacheHome&) = delete;
  ScopedCacheHome& operator=(const ScopedCacheHome&) = delete;

 private:
  bool had_;
  QByteArray saved_;
};

// Caches, for the CPU backend the tests' windows and workers use, roofs far below anything a
// step does (as a loaded machine's probe might have measured them): every step raises them.
inline void cache_roofs_every_step_beats() {
  compute::Roofs low;
  low.backend = "cpu";
  low.device = "test CPU";
  low.last_level_cache_bytes = 1;  // every step is judged against main memory
  low.in_cache = {1, 1e-6};
  low.memory = {1, 1e-6};
  for (const gguf::GgmlType type :
       {gguf::GgmlType::F32, gguf::GgmlType::F16, gguf::GgmlType::Q8_0, gguf::GgmlType::Q4_0}) {
    low.matmul.push_back({type, 1e-6});
  }
  const std::unique_ptr<compute::Backend> cpu =
      compute::make_backend(compute::BackendChoice(compute::BackendKind::kCpu));
  compute::ProbeOptions seed;
  seed.fresh = true;
  seed.machine_busy = [] { return false; };
  seed.measure = [low](compute::Backend&) { return low; };
  compute::probe_device_roofs(*cpu, seed);
}

}  // namespace servescope::gui::testing
