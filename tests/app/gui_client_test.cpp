// EngineClient's mirror of the engine thread's state, fed through the client's own reply
// signals (as the worker's replies and a replayed recording reach it): the engine's info is
// replaced whole by a new engine and never patched; what changes while it serves (memory,
// batching) has fields of its own, each change counted by a revision.
#include <gtest/gtest.h>

#include "app/gui/engine_bridge/engine_client.h"
#include "tests/app/gui_test_support.h"

namespace servescope::gui {
namespace {

EngineInfo made_engine() {
  EngineInfo info;
  info.model_name = "test";
  info.memory_weights_bytes = 1000;
  info.memory_kv_bytes = 200;
  info.memory_working_bytes = 30;
  info.batching = {false, 0};
  return info;
}

TEST(EngineClientState, ANewEngineSetsItsFactsAndLaterMeasurementsLeaveThemAsMade) {
  testing::app();
  EngineClient client;
  Q_EMIT client.batch_sweep_point(BatchSweepPoint{});
  Q_EMIT client.engine_ready(made_engine());
  const EngineState& s = client.state();
  ASSERT_TRUE(s.info.has_value());
  EXPECT_TRUE(s.batch_sweep.isEmpty()) << "a sweep of the engine replaced stays with it";
  EXPECT_EQ(s.memory.weights_bytes, 1000u);
  EXPECT_EQ(s.memory.kv_bytes, 200u);
  EXPECT_EQ(s.memory.working_bytes, 30u);
  EXPECT_FALSE(s.batching.static_batches);

  const uint64_t revision = s.info_revision;
  Q_EMIT client.memory_measured(0, 0, 4096);
  EXPECT_EQ(s.memory.working_bytes, 4096u);
  EXPECT_EQ(s.memory.weights_bytes, 0u);
  EXPECT_EQ(s.info->memory_working_bytes, 30u) << "the info is the engine as it was made";
  Q_EMIT client.batching_changed(BatchingChoice{true, 250});
  EXPECT_TRUE(s.batching.static_batches);
  EXPECT_EQ(s.batching.wait_ms, 250);
  EXPECT_FALSE(s.info->batching.static_batches);
  EXPECT_EQ(s.info_revision, revision + 2);

  Q_EMIT client.engine_ready(made_engine());  // a new engine brings its own facts
  EXPECT_EQ(s.memory.working_bytes, 30u);
  EXPECT_FALSE(s.batching.static_batches);
}

}  // namespace
}  // namespace servescope::gui
