// Record and replay in the real window, offscreen: a live run of lesson 3's first step (the
// user's request alone, then with 15 classmates, continuous batching) is recorded, and
// its replay into a fresh window with no engine shows the same panels (their CSV exports) at
// the same step; seeking back and forth and stepping rebuild exactly the state folded from the
// recording; the replay is marked as one, in lecture mode too, and drives no engine.
#include <gtest/gtest.h>

#include <QAction>
#include <QLabel>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <algorithm>
#include <map>
#include <sstream>

#include "app/gui/lesson_ui/action_dispatcher.h"
#include "app/gui/lesson_ui/learn_pane.h"
#include "app/gui/lesson_ui/lesson_ui.h"
#include "app/gui/recording/replay_bar.h"
#include "app/gui/recording/replay_player.h"
#include "app/gui/recording/trace_file.h"
#include "app/gui/recording/trace_recorder.h"
#include "app/gui/window/main_window.h"
#include "tests/app/gui_test_support.h"
#include "tests/app/gui_window_support.h"

namespace servescope::gui {
namespace {

using testing::app;
using testing::wait_until;

// The panels fed by the engine's records (attention and the quantisation lab are not recorded).
constexpr std::array kRecordedPanels = {PanelId::kPhases, PanelId::kKvCache, PanelId::kBatching,
                                        PanelId::kRoofline};

// Two frames of the window: what was queued before is drained, folded and shown.
void settle(const MainWindow& window) {
  QSignalSpy frames(&window, &MainWindow::frame_folded);
  ASSERT_TRUE(wait_until([&] { return frames.count() >= 2; }));
}

// The CSV without one (unquoted) column.
std::string without_column(const std::string& csv, const std::string& column) {
  std::stringstream in(csv);
  std::string out;
  std::optional<size_t> drop;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::stringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) fields.push_back(cell);
    if (!drop) {
      const auto it = std::find(fields.begin(), fields.end(), column);
      EXPECT_NE(it, fields.end()) << column << " is not a column of " << line;
      drop = static_cast<size_t>(it - fields.begin());
    }
    if (*drop < fields.size()) fields.erase(fields.begin() + static_cast<std::ptrdiff_t>(*drop));
    for (size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + fields[i];
    out += '\n';
  }
  return out;
}

// Each recorded panel's CSV export, each panel shown in turn so it takes its snapshot. The KV
// grid's event_age_frames counts the viewer's frames since a block last changed (its flash
// animation): the viewer's time, not a figure of the run, so it is left out.
std::map<PanelId, std::string> panel_csvs(MainWindow& window) {
  std::map<PanelId, std::string> csvs;
  for (const PanelId id : kRecordedPanels) {
    window.show_panel(id);
    EXPECT_TRUE(wait_until([&] { return window.panels().has_data(id); }, 30000)) << panel_key(id);
    settle(window);
    const std::string csv = window.panels().panel(id)->csv().toStdString();
    csvs[id] = id == PanelId::kKvCache ? without_column(csv, "event_age_frames") : csv;
  }
  return csvs;
}

// A folder fed the recording's records up to and including its `steps`-th step.
TelemetryFolder folded_until_step(const Trace& trace, int64_t steps) {
  TelemetryFolder folder;
  int64_t seen = 0;
  for (const TraceEvent& event : trace.events) {
    if (const auto* engine = std::get_if<trace::Engine>(&event.body)) {
      const EngineInfo& info = engine->info;
      folder.reset({info.kv_blocks, info.block_size, info.kv_bytes_per_block});
    } else if (const auto* batch = std::get_if<trace::Telemetry>(&event.body)) {
      for (const telemetry::TelemetryItem& item : batch->items) {
        folder.fold(std::span(&item, 1), event.ms);
        if (std::holds_alternative<telemetry::StepRecord>(item) && ++seen == steps) return folder;
      }
    }
  }
  return folder;
}

class RecordAndReplay : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    app();
    QTemporaryDir cache;
    path_ = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                      ("servescope-replay-test-" +
                                       std::to_string(QCoreApplication::applicationPid()) +
                                       ".sstrace"));
    live_ = new std::map<PanelId, std::string>;
    WindowOptions options = testing::test_window_options(cache.path());
    auto writer =
        std::make_shared<TraceWriter>(*path_, TraceHeader{kTraceVersion, trace_time_now()});
    options.record = writer;
    {
      MainWindow window(options);
      window.resize(1400, 900);
      window.show();
      ASSERT_TRUE(wait_until([&] { return window.engine_info().has_value(); }));
      // Lesson 3's first step, "One user, then sixteen", run as the Learn pane runs it (once):
      // the user's request alone, then with 15 classmates, continuous batching.
      std::optional<QString> outcome;
      ActionDispatcher& dispatcher = window.lessons().dispatcher();
      QObject::connect(&dispatcher, &ActionDispatcher::finished, &window,
                       [&] { outcome = "finished"; });
      QObject::connect(&dispatcher, &ActionDispatcher::failed, &window,
                       [&](const QString& reason) { outcome = "failed: " + reason; });
      ASSERT_TRUE(window.lessons().learn().open_lesson("batching", 0));
      dispatcher.run(to_lesson_actions(testing::shipped_lesson("batching").steps.at(0).run));
      ASSERT_TRUE(wait_until([&] { return outcome.has_value(); }, 240000));
      ASSERT_EQ(outcome->toStdString(), "finished");
      ASSERT_TRUE(wait_until([&] { return !window.generating(); }));
      settle(window);
      live_steps_ = window.folder().counts().steps;
      live_kv_events_ = window.folder().counts().kv_events;
      live_inconsistent_ = window.folder().counts().inconsistent_kv_events;
      live_own_ = window.folder().own_requests();
      *live_ = panel_csvs(window);
      ASSERT_EQ(window.folder().counts().steps, live_steps_) << "the engine ran on";
    }
    writer->finish();
  }
  static void TearDownTestSuite() {
    std::filesystem::remove(*path_);
    delete path_;
    delete live_;
  }

  // A replay window of the recording, its first engine shown.
  std::unique_ptr<MainWindow> replay_window() {
    WindowOptions options = testing::test_window_options(cache_.path());
    options.replay = std::make_shared<const Trace>(read_trace(*path_));
    auto window = std::make_unique<MainWindow>(options);
    window->resize(1400, 900);
    window->show();
    EXPECT_TRUE(wait_until([&] { return window->engine_info().has_value(); }, 10000));
    return window;
  }

  static std::filesystem::path* path_;
  static std::map<PanelId, std::string>* live_;
  static int64_t live_steps_;
  static int64_t live_kv_events_;
  static int64_t live_inconsistent_;
  static std::vector<int64_t> live_own_;  // the user's requests, in their own colour
  QTemporaryDir cache_;
};

std::filesystem::path* RecordAndReplay::path_ = nullptr;
std::map<PanelId, std::string>* RecordAndReplay::live_ = nullptr;
int64_t RecordAndReplay::live_steps_ = 0;
int64_t RecordAndReplay::live_kv_events_ = 0;
int64_t RecordAndReplay::live_inconsistent_ = 0;
std::vector<int64_t> RecordAndReplay::live_own_;

TEST_F(RecordAndReplay, AReplayOfARecordedLesson3RunShowsTheSameFiguresAsTheLiveRun) {
  ASSERT_GT(live_steps_, 24) << "the live run did not run";
  std::unique_ptr<MainWindow> window = replay_window();
  ReplayPlayer& player = *window->replay_player();
  player.seek(player.duration_ms());  // the end, where the live panels were read
  settle(*window);
  EXPECT_EQ(window->folder().counts().steps, live_steps_);
  EXPECT_EQ(window->folder().counts().kv_events, live_kv_events_);
  EXPECT_EQ(window->folder().counts().inconsistent_kv_events, live_inconsistent_);
  ASSERT_FALSE(live_own_.empty());
  EXPECT_EQ(window->folder().own_requests(), live_own_);  // yours is yours in the replay too
  // The Learn pane follows the recording to the lesson step it showed.
  const LearnPane& learn = window->lessons().learn();
  ASSERT_NE(learn.current_lesson(), nullptr);
  EXPECT_EQ(learn.current_lesson()->id, "batching");
  EXPECT_EQ(learn.current_step(), 0);
  const std::map<PanelId, std::string> replayed = panel_csvs(*window);
  for (const PanelId id : kRecordedPanels) {
    EXPECT_GT(live_->at(id).size(), 100u) << panel_key(id);
    EXPECT_EQ(replayed.at(id), live_->at(id)) << panel_key(id);
  }
}

TEST_F(RecordAndReplay, SteppingAndSeekingRebuildTheStateFoldedFromTheRecordingAtThatStep) {
  std::unique_ptr<MainWindow> window = replay_window();
  ReplayPlayer& player = *window->replay_player();
  const Trace trace = read_trace(*path_);
  player.seek(0.0);
  for (int i = 0; i < 5; ++i) player.step();
  EXPECT_FALSE(player.playing());
  EXPECT_EQ(player.steps_played(), 5);
  settle(*window);
  const TelemetryFolder expected = folded_until_step(trace, 5);
  EXPECT_EQ(window->folder().counts().steps, 5);
  EXPECT_EQ(window->folder().counts().kv_events, expected.counts().kv_events);
  EXPECT_EQ(window->folder().blocks_used(), expected.blocks_used());
  EXPECT_EQ(window->folder().retained_tokens(), expected.retained_tokens());
  // To the end, back to the start, and to the end again: the same panels each time.
  player.seek(player.duration_ms());
  settle(*window);
  const std::map<PanelId, std::string> first = panel_csvs(*window);
  player.seek(0.0);
  settle(*window);
  EXPECT_EQ(window->folder().counts().steps, 0);
  player.seek(player.duration_ms());
  settle(*window);
  EXPECT_EQ(panel_csvs(*window), first);
  EXPECT_EQ(window->folder().counts().steps, live_steps_);
}

TEST_F(RecordAndReplay, PlayingAtSpeedReachesTheEndAndThePanelsFill) {
  WindowOptions options = testing::test_window_options(cache_.path());
  options.replay = std::make_shared<const Trace>(read_trace(*path_));
  options.replay_speed = kMaxReplaySpeed;
  MainWindow window(options);
  window.show();
  window.show_panel(PanelId::kBatching);
  ReplayPlayer& player = *window.replay_player();
  ASSERT_TRUE(wait_until([&] { return player.at_end(); }, 60000));
  EXPECT_FALSE(player.playing());
  settle(window);
  EXPECT_EQ(window.folder().counts().steps, live_steps_);
  EXPECT_TRUE(window.panels().has_data(PanelId::kBatching));
}

TEST_F(RecordAndReplay, AReplayIsMarkedInLectureModeTooAndDrivesNoEngine) {
  std::unique_ptr<MainWindow> window = replay_window();
  const auto* bar = window->findChild<ReplayBar*>("replay-bar");
  ASSERT_NE(bar, nullptr);
  const EngineInfo& engine = window->replay_player()->first_engine();
  EXPECT_TRUE(bar->banner().startsWith("Replay of ")) << bar->banner().toStdString();
  EXPECT_TRUE(bar->banner().contains(engine.device)) << bar->banner().toStdString();
  EXPECT_TRUE(bar->banner().contains(" UTC, ")) << bar->banner().toStdString();
  window->set_controls_visible(false);  // lecture mode's view
  EXPECT_TRUE(bar->isVisible());
  window->set_controls_visible(true);
  // The pace keys lecture mode sends (P, S) pause and step the replay.
  ReplayPlayer& player = *window->replay_player();
  ASSERT_TRUE(player.playing());
  window->set_speed(Speed::kSingleStep);
  EXPECT_FALSE(player.playing());
  const int64_t steps = player.steps_played();
  window->step();
  EXPECT_EQ(player.steps_played(), steps + 1);
  window->set_speed(Speed::kRealTime);
  EXPECT_TRUE(player.playing());
  // Generation is off; asking anyway says why and loads nothing.
  const auto actions = window->findChildren<QAction*>();
  for (QAction* action : actions) {
    if (action->text().contains("Generate")) {
      EXPECT_FALSE(action->isEnabled());
    }
  }
  const qint64 request = window->user_request();  // the recording's, while it generates
  window->generate();
  EXPECT_EQ(window->user_request(), request);
  EXPECT_TRUE(window->message().contains("replays a recorded run"))
      << window->message().toStdString();
  window->open_model(QString::fromStdString(testing::kTestData) + "/nothing.gguf");
  EXPECT_FALSE(window->loading());
  EXPECT_EQ(window->engine_info()->model_path, engine.model_path);
  EXPECT_EQ(window->recorder(), nullptr);
  // A lesson's experiment is refused at once, not left waiting for an engine.
  std::optional<QString> refused;
  QObject::connect(&window->lessons().dispatcher(), &ActionDispatcher::failed, window.get(),
                   [&](const QString& message) { refused = message; });
  window->lessons().dispatcher().run({});
  ASSERT_TRUE(refused.has_value());
  EXPECT_TRUE(refused->contains("needs a live engine")) << refused->toStdString();
}

TEST_F(RecordAndReplay, ALessonStepShownBeforeTheModelLoadedPlaysAtTheStart) {
  // The scripted demo opens its lesson when the engine is ready, so the Learn pane's event is
  // written just before the engine's.
  Trace trace = read_trace(*path_);
  const double engine_ms = trace.events.front().ms;
  trace.events.insert(trace.events.begin(),
                      TraceEvent{engine_ms - 0.5, trace::LessonShown{"batching", "sweep"}});
  WindowOptions options = testing::test_window_options(cache_.path());
  options.replay = std::make_shared<const Trace>(trace);
  MainWindow window(options);
  // The first lesson step played is the one shown before the engine (the recording's own step
  // comes milliseconds later: a slow machine, under the sanitizer, may show that one already).
  std::vector<std::pair<QString, QString>> played;
  QObject::connect(
      window.replay_player(), &ReplayPlayer::lesson_shown, &window,
      [&played](const QString& lesson, const QString& step) { played.emplace_back(lesson, step); });
  window.show();
  ASSERT_TRUE(wait_until([&] { return window.engine_info().has_value(); }, 10000));
  ASSERT_TRUE(wait_until([&] { return !played.empty(); }, 10000));
  EXPECT_EQ(played.front(), std::make_pair(QString("batching"), QString("sweep")));
  EXPECT_EQ(window.lessons().learn().current_lesson()->id, "batching");
  ReplayPlayer& player = *window.replay_player();
  player.pause();
  player.seek(player.duration_ms());
  player.seek(0.0);  // the start is the engine: the folder starts over
  settle(window);
  EXPECT_EQ(window.folder().counts().steps, 0);
  EXPECT_EQ(player.position_ms(), 0.0);
}

}  // namespace
}  // namespace servescope::gui
