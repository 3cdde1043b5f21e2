// One set of roofs for every consumer: the roofline panel and the lessons' roof measures both
// judge the folded steps against the probe's roofs raised by any step that beat them, and no
// point is ever drawn above the roof it is judged against.
#include <gtest/gtest.h>

#include <QTemporaryDir>
#include <memory>
#include <vector>

#include "app/gui/window/main_window.h"
#include "app/gui/lesson_ui/measure_reader.h"
#include "app/gui/engine_bridge/measured_roofs.h"
#include "app/gui/panels/panel_adapter.h"
#include "app/gui/panels/panel_host.h"
#include "tests/app/gui_test_support.h"
#include "tests/app/gui_window_support.h"
#include "widgets/roofline_panel.h"

namespace servescope::gui {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// A step that moved `bytes` and did `flops` in `ms`.
telemetry::StepRecord step(int64_t index, int64_t batch, uint64_t bytes, double flops, double ms) {
  telemetry::StepRecord s;
  s.step_index = index;
  s.decode_tokens = batch;
  s.sequences = batch;
  s.weight_bytes_read = bytes;
  s.flops = flops;
  s.wall_ms = ms;
  return s;
}

// The probe's roofs as a loaded machine measured them: 12.2 GB/s from memory, 33.3 GFLOP/s.
compute::StepRoofs probed_under_load() {
  compute::StepRoofs roofs;
  roofs.cache_gb_per_s = 40.0;
  roofs.memory_gb_per_s = 12.2;
  roofs.compute_gflop_per_s = 33.3;
  roofs.cache_bytes = 32 * kMiB;
  return roofs;
}

TEST(GuiRoofs, NoPointIsDrawnAboveItsRoofAndLessonsReadTheSameRoofs) {
  TelemetryFolder folder;
  const std::vector<telemetry::TelemetryItem> items = {
      // A 1.6 GB model decoded at 15.4 tokens/s: 24.7 GB/s from main memory.
      step(0, 1, 1'600'000'000, 0.8e9, 1000.0 / 15.4),
      // A batched decode of a model that fits the cache: 75 GFLOP/s at 16 FLOP/byte.
      step(1, 16, 8 * kMiB, 16.0 * 8 * kMiB, 16.0 * 8 * kMiB / 75e9 * 1e3),
      // A batch-1 step of the same model, well under the roofs.
      step(2, 1, 8 * kMiB, 1.0 * 8 * kMiB, 2.0),
  };
  folder.fold(items, 0.0);
  EngineInfo info;
  info.device = "test CPU";
  info.roofs = probed_under_load();

  const auto adapter = make_roofline_adapter(nullptr);
  adapter->refresh(PanelFeed{folder, info, 0.0, nullptr, nullptr, nullptr, {}, nullptr, {}});
  auto* panel = qobject_cast<widgets::RooflinePanel*>(adapter->view());
  ASSERT_NE(panel, nullptr);
  const widgets::RooflineSnapshot& shown = panel->snapshot();
  ASSERT_EQ(shown.points.size(), 3u);
  EXPECT_TRUE(panel->points_above_roofs().empty());

  // The working set picks the roof: the 1.6 GB model main memory, the 8 MiB one the cache.
  EXPECT_EQ(shown.points[0].roof, widgets::PointRoof::kMemory);
  EXPECT_EQ(shown.points[1].roof, widgets::PointRoof::kCache);
  EXPECT_EQ(shown.points[2].roof, widgets::PointRoof::kCache);
  // Raised to what the steps achieved, and said so.
  EXPECT_NEAR(shown.memory_gb_per_s, 24.64, 0.01);
  EXPECT_TRUE(shown.memory_raised);
  EXPECT_NEAR(shown.compute_gflop_per_s, 75.0, 1e-6);
  EXPECT_TRUE(shown.compute_raised);
  EXPECT_FALSE(shown.cache_raised);
  EXPECT_DOUBLE_EQ(shown.cache_gb_per_s, 40.0);
  EXPECT_EQ(panel->raised_note(),
            QStringLiteral("main memory and compute roofs raised by a step of this run"));

  // The lessons read the roofs the panel draws.
  const MeasureInputs inputs{&folder, &info, -1, nullptr, nullptr};
  EXPECT_DOUBLE_EQ(*read_measure(inputs, "memory_roof_gbs").value, shown.memory_gb_per_s);
  EXPECT_DOUBLE_EQ(*read_measure(inputs, "cache_roof_gbs").value, shown.cache_gb_per_s);
  EXPECT_DOUBLE_EQ(*read_measure(inputs, "compute_roof_gflops").value, shown.compute_gflop_per_s);
}

TEST(GuiRoofs, StepsUnderTheRoofsLeaveThemAsProbed) {
  std::deque<telemetry::StepRecord> steps = {step(0, 1, 8 * kMiB, 8.0 * kMiB, 2.0)};
  const compute::StepRoofs roofs = roofs_under_steps(probed_under_load(), steps);
  EXPECT_DOUBLE_EQ(roofs.cache_gb_per_s, 40.0);
  EXPECT_DOUBLE_EQ(roofs.memory_gb_per_s, 12.2);
  EXPECT_DOUBLE_EQ(roofs.compute_gflop_per_s, 33.3);
  EXPECT_FALSE(roofs.cache_raised || roofs.memory_raised || roofs.compute_raised);
}

// README: each roof is "kept highest across probes, raised to any measured step that beat it".
// The roofline a class saw raised by a run is not lowered again when the engine is rebuilt for
// another KV type or the model reloaded (the weights as loaded, another backend).
TEST(GuiRoofs, TheRooflineKeepsItsRaisedRoofsWhenTheEngineIsRebuilt) {
  using testing::wait_until;
  testing::app();
  QTemporaryDir roofs_cache;
  const testing::ScopedCacheHome cache_home(roofs_cache.path());
  testing::cache_roofs_every_step_beats();
  QTemporaryDir cache;
  MainWindow window(testing::test_window_options(cache.path()));
  int engines = 0;
  int64_t updates_at_ready = 0;  // the roofline's snapshots when the last engine was ready
  QObject::connect(&window, &MainWindow::engine_ready, &window, [&] {
    ++engines;
    updates_at_ready = window.panels().updates(PanelId::kRoofline);
  });
  window.resize(1400, 900);
  window.show();
  ASSERT_TRUE(wait_until([&] { return window.engine_info().has_value(); }));
  window.show_panel(PanelId::kRoofline);
  const auto* panel = qobject_cast<widgets::RooflinePanel*>(window.panels().panel(PanelId::kRoofline));
  ASSERT_NE(panel, nullptr);
  int idles = 0;  // the window folds every record, and feeds the panels, before saying so
  QObject::connect(&window, &MainWindow::engine_idle, &window, [&] { ++idles; });
  window.set_max_tokens(8);
  window.generate();
  ASSERT_TRUE(wait_until([&] { return window.generating(); }));
  ASSERT_TRUE(wait_until([&] { return !window.generating() && idles > 0; }));
  const widgets::RooflineSnapshot raised = panel->snapshot();
  ASSERT_TRUE(raised.memory_raised && raised.compute_raised);

  // The roofline's first snapshot after the new engine was ready is the new engine's.
  const auto expect_kept = [&](const char* after) {
    ASSERT_TRUE(wait_until(
        [&] { return window.panels().updates(PanelId::kRoofline) > updates_at_ready; }))
        << "the new engine's roofs drawn, " << after;
    const widgets::RooflineSnapshot shown = panel->snapshot();
    EXPECT_GE(shown.memory_gb_per_s, raised.memory_gb_per_s) << after;
    EXPECT_GE(shown.compute_gflop_per_s, raised.compute_gflop_per_s) << after;
    EXPECT_TRUE(shown.memory_raised && shown.compute_raised) << after;
  };
  window.set_kv_type(window.kv_type() == gguf::GgmlType::F32 ? gguf::GgmlType::F16
                                                             : gguf::GgmlType::F32);
  ASSERT_TRUE(wait_until([&] { return engines == 1; }));
  expect_kept("another KV type");
  window.set_backend(BackendChoice(compute::BackendKind::kCpu));
  ASSERT_TRUE(wait_until([&] { return engines == 2; }));
  expect_kept("the model reloaded");
}

}  // namespace
}  // namespace servescope::gui
