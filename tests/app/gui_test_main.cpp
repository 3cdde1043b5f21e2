// One QApplication for the GUI tests, made before the tests and destroyed after them (a
// function-local static one would outlive the windows' threads and crash at exit).
//
// Each run gets XDG cache, config and data folders of its own, so no test reads or writes the
// user's cache or settings (SERVESCOPE_TEST_KEEP_XDG set keeps the environment's folders).
// The fresh cache is seeded with the CPU's roofs: on a cold cache each engine a test loads
// would measure them (10 s a probe on a loaded 2-core machine; 76 s for a test that loads the
// CPU backend both ways and a Vulkan device, against 2 s warm).
#include <gtest/gtest.h>

#include <QApplication>
#include <QDir>
#include <QTemporaryDir>
#include <memory>

#include "tests/app/gui_test_support.h"

namespace {

// The GPU driver's compiled shaders stay in the cache they were in (Mesa's follows
// XDG_CACHE_HOME): they change no result, and compiling them anew costs a Vulkan test 10 s.
void keep_driver_shader_cache() {
  if (qEnvironmentVariableIsSet("MESA_SHADER_CACHE_DIR")) return;
  const QString cache = qEnvironmentVariableIsEmpty("XDG_CACHE_HOME")
                            ? QDir::homePath() + "/.cache"
                            : qEnvironmentVariable("XDG_CACHE_HOME");
  qputenv("MESA_SHADER_CACHE_DIR", cache.toLocal8Bit());  // Mesa adds mesa_shader_cache/
}

// Points the XDG folders into `root`, each made empty.
void use_xdg_folders_under(const QString& root) {
  for (const char* variable : {"XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"}) {
    const QString folder = root + "/" + QString(variable).toLower();
    QDir().mkpath(folder);
    qputenv(variable, folder.toLocal8Bit());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  std::unique_ptr<QTemporaryDir> xdg;  // removed when the run ends
  if (servescope::gui::testing::own_xdg_folders()) {
    // Under the build tree, as the other tests' temporary files.
    xdg = std::make_unique<QTemporaryDir>(QString(SERVESCOPE_TEST_TMPDIR) + "/gui-test-XXXXXX");
    if (!xdg->isValid()) return 2;
    keep_driver_shader_cache();
    use_xdg_folders_under(xdg->path());
    servescope::gui::testing::cache_test_machine_cpu_roofs();
  }
  ::testing::InitGoogleTest(&argc, argv);
  QApplication app(argc, argv);
  return RUN_ALL_TESTS();
}
