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

// Delivers the events posted so far (queued calls, layout requests, window-system events) and
// those they post in turn, waiting for nothing still to come: the after-effects of a key or a
// resize, which the test then reads. Work on other threads or timers needs wait_until.
inline void deliver_posted_events() {
  for (int round = 0; round < 3; ++round) {  // an event's handler may post a few more
    QCoreApplication::sendPostedEvents();
    QCoreApplication::processEvents();
  }
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

// Caches `roofs` as the measured roofs of the device `choice` makes, measured on a quiet
// machine, so that no engine the test loads there measures its own.
inline void cache_roofs(const compute::BackendChoice& choice, const compute::Roofs& roofs) {
  const std::unique_ptr<compute::Backend> backend = compute::make_backend(choice);
  compute::ProbeOptions seed;
  seed.fresh = true;
  seed.machine_busy = [] { return false; };
  seed.measure = [roofs](compute::Backend&) { return roofs; };
  compute::probe_device_roofs(*backend, seed);
}

// The same for the CPU backend the tests' windows and workers use.
inline void cache_cpu_roofs(const compute::Roofs& roofs) {
  cache_roofs(compute::BackendChoice(compute::BackendKind::kCpu), roofs);
}

// CPU roofs with one bandwidth for both working sets and one compute roof for every type.
inline compute::Roofs uniform_cpu_roofs(double gb_per_s, double gflop_per_s) {
  compute::Roofs roofs;
  roofs.backend = "cpu";
  roofs.device = "test CPU";
  roofs.last_level_cache_bytes = 1;  // every step is judged against main memory
  roofs.in_cache = {1, gb_per_s};
  roofs.memory = {1, gb_per_s};
  for (const gguf::GgmlType type :
       {gguf::GgmlType::F32, gguf::GgmlType::F16, gguf::GgmlType::Q8_0, gguf::GgmlType::Q4_0}) {
    roofs.matmul.push_back({type, gflop_per_s});
  }
  return roofs;
}

// Roofs as a modest desktop's probe measures them (a 32 MiB last-level cache), for tests that
// need roofs but not this machine's: steps faster than these raise them, as they would.
inline compute::Roofs test_machine_roofs() {
  compute::Roofs roofs = uniform_cpu_roofs(15.0, 60.0);
  roofs.last_level_cache_bytes = uint64_t{32} << 20;
  roofs.in_cache = {uint64_t{8} << 20, 60.0};
  roofs.memory = {uint64_t{512} << 20, 15.0};
  return roofs;
}

// Caches test_machine_roofs() for the CPU, with float and with 8-bit activations (each its
// own cache entry): what a window on the CPU backend loads, whichever it is asked for.
inline void cache_test_machine_cpu_roofs() {
  compute::BackendChoice cpu(compute::BackendKind::kCpu);
  for (const bool quantised : {false, true}) {
    cpu.quantised_activations = quantised;
    cache_roofs(cpu, test_machine_roofs());
  }
}

// Whether this run has XDG folders of its own (gui_test_main.cpp): unless
// SERVESCOPE_TEST_KEEP_XDG is set, for a run against the user's own cache and settings.
inline bool own_xdg_folders() { return !qEnvironmentVariableIsSet("SERVESCOPE_TEST_KEEP_XDG"); }

// The same for the best Vulkan device, for a test that moves a window there (a GPU's last
// level cache is unknown); nothing when the cache is the user's own.
inline void cache_test_machine_vulkan_roofs() {
  if (!own_xdg_folders()) return;
  compute::Roofs roofs = test_machine_roofs();
  roofs.backend = "vulkan";
  roofs.last_level_cache_bytes = 0;
  cache_roofs(compute::BackendChoice(compute::BackendKind::kVulkan), roofs);
}

// Caches roofs far below anything a step does (as a loaded machine's probe might have
// measured them): every step raises them.
inline void cache_roofs_every_step_beats() { cache_cpu_roofs(uniform_cpu_roofs(1e-6, 1e-6)); }

}  // namespace servescope::gui::testing
