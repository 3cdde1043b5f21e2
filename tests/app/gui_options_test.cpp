// servescope's command line: the demo options parse, bad input is refused with a reason.
#include "app/gui/window/gui_options.h"

#include <gtest/gtest.h>

namespace servescope::gui {
namespace {

TEST(GuiOptions, ParsesTheDemoCommand) {
  const GuiOptions o =
      parse_gui_options({"--demo", "Once upon a time", "--classmates", "4", "--panel", "kv",
                         "--screenshot", "out.png", "--after-ms", "4000", "--backend", "cpu",
                         "--theme", "dark", "--sweep", "--overlay"});
  EXPECT_TRUE(o.sweep);
  EXPECT_TRUE(o.overlay);
  EXPECT_EQ(o.demo_prompt, "Once upon a time");
  EXPECT_EQ(o.classmates, 4);
  EXPECT_EQ(o.panel, PanelId::kKvCache);
  EXPECT_EQ(o.screenshot, "out.png");
  EXPECT_EQ(o.after_ms, 4000);
  EXPECT_EQ(o.backend, "cpu");
  EXPECT_EQ(o.theme, ThemeChoice::kDark);
}

// --clients, the option's first name, still sets the classmates.
TEST(GuiOptions, ParsesRemoteAndRefusesWhatIsNotAServersAddress) {
  for (const char* good : {"http://127.0.0.1:8080", "https://gpu.example.org", "http://host:80/",
                           "http://[::1]:8080", "http://localhost"}) {
    EXPECT_EQ(parse_gui_options({"--remote", good}).remote, good) << good;
  }
  for (const char* bad : {"127.0.0.1:8080", "ftp://host", "http://", "http://host:",
                          "http://host:123456", "http://host/v1", "http://ho st", "http://[::1",
                          "http://host:80x"}) {
    EXPECT_THROW(parse_gui_options({"--remote", bad}), GuiUsageError) << bad;
  }
  EXPECT_THROW(parse_gui_options({"--remote", "http://h:1", "--replay", "run.sstrace"}),
               GuiUsageError);
  EXPECT_THROW(parse_gui_options({"--remote", "http://h:1", "--demo", "x", "--sweep"}),
               GuiUsageError);
  EXPECT_EQ(parse_gui_options({"--remote", "http://h:1", "--demo", "x", "--classmates", "8"})
                .classmates,
            8);
}

TEST(GuiOptions, AcceptsClientsForClassmates) {
  EXPECT_EQ(parse_gui_options({"--demo", "x", "--clients", "3"}).classmates, 3);
}

TEST(GuiOptions, ParsesBatchingAndActivations) {
  const GuiOptions o =
      parse_gui_options({"--batching", "static", "--batch-wait", "300", "--activations", "q8_0"});
  EXPECT_EQ(o.static_batching, true);
  EXPECT_EQ(o.batch_wait_ms, 300);
  EXPECT_EQ(o.quantised_activations, true);
  const GuiOptions none = parse_gui_options({});
  EXPECT_FALSE(none.static_batching.has_value());
  EXPECT_FALSE(none.quantised_activations.has_value());
}

TEST(GuiOptions, ParsesCheckLessonsWithAndWithoutAFolder) {
  EXPECT_EQ(parse_gui_options({"--check-lessons"}).check_lessons, "");
  EXPECT_EQ(parse_gui_options({"--check-lessons", "lessons/"}).check_lessons, "lessons/");
  EXPECT_FALSE(parse_gui_options({}).check_lessons.has_value());
  EXPECT_THROW(parse_gui_options({"--check-lessons", "lessons/", "--overlay"}), GuiUsageError);
}

TEST(GuiOptions, ParsesRunLessonsWithItsLessonsAndJson) {
  const GuiOptions all = parse_gui_options({"--run-lessons"});
  EXPECT_EQ(all.run_lessons, "");
  EXPECT_TRUE(all.lesson_ids.empty());
  EXPECT_FALSE(all.json);
  const GuiOptions some =
      parse_gui_options({"--run-lessons", "lessons/", "--lesson", "kv-cache", "--lesson",
                         "serving", "--json"});
  EXPECT_EQ(some.run_lessons, "lessons/");
  EXPECT_EQ(some.lesson_ids, (std::vector<std::string>{"kv-cache", "serving"}));
  EXPECT_TRUE(some.json);
  EXPECT_THROW(parse_gui_options({"--run-lessons", "--theme", "dark"}), GuiUsageError);
  EXPECT_THROW(parse_gui_options({"--json"}), GuiUsageError);
}

TEST(GuiOptions, ParsesTheDemosLessonView) {
  const GuiOptions o = parse_gui_options(
      {"--demo", "Once upon a time", "--lesson", "kv-cache", "--step", "3", "--run", "--learn-tab",
       "practice", "--question", "2", "--answer", "384,000 bytes", "--lecture"});
  EXPECT_EQ(o.lesson, "kv-cache");
  EXPECT_EQ(o.step, 3);
  EXPECT_TRUE(o.run_step);
  EXPECT_EQ(o.learn_tab, "practice");
  EXPECT_EQ(o.question, 2);
  EXPECT_EQ(o.answer, "384,000 bytes");
  EXPECT_TRUE(o.lecture);
}

TEST(GuiOptions, EveryPanelHasAName) {
  for (const PanelId id : kAllPanels) {
    EXPECT_EQ(parse_panel_key(panel_key(id)), id);
  }
}

TEST(GuiOptions, ReadsTheQuantisationLabsDemoOptions) {
  const GuiOptions o =
      parse_gui_options({"--demo", "x", "--quant-types", "q8_0,q4_0", "--quant-block", "q4_1"});
  EXPECT_EQ(o.quant_types, "q8_0,q4_0");
  EXPECT_EQ(o.quant_block, "q4_1");
}

// Every numeric option of the window's command line has both bounds, and the refusal names
// them: no giant wait, no 100,000 classmates.
TEST(GuiOptions, EveryNumberIsBoundedAndTheRefusalNamesTheLimits) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--demo", "x", "--clients", "100000"}, "--clients needs a whole number from 0 to 32"},
      {{"--demo", "x", "--clients", "-1"}, "--clients needs a whole number from 0 to 32"},
      {{"--demo", "x", "--after-ms", "1000000000"},
       "--after-ms needs a whole number from 0 to 600000"},
      {{"--device", "65"}, "--device needs a whole number from 0 to 64"},
      {{"--batch-wait", "1000000000000"}, "--batch-wait needs a whole number from 0 to 10000"},
      {{"--demo", "x", "--lesson", "kv-cache", "--step", "100"},
       "--step needs a whole number from 1 to 99"},
      {{"--demo", "x", "--lesson", "kv-cache", "--question", "1000"},
       "--question needs a whole number from 1 to 999"},
      {{"--demo", "x", "--lesson", "kv-cache", "--question", "0"},
       "--question needs a whole number from 1 to 999"},
  };
  for (const auto& [args, reason] : cases) {
    try {
      parse_gui_options(args);
      ADD_FAILURE() << "accepted " << reason;
    } catch (const GuiUsageError& error) {
      EXPECT_NE(std::string(error.what()).find(reason), std::string::npos) << error.what();
    }
  }
}

TEST(GuiOptions, RefusesBadInputWithTheOptionAtFault) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--demo", "x", "--clients", "33"}, "--clients"},
      {{"--demo", "x", "--panel", "everything"}, "--panel"},
      {{"--backend", "cuda"}, "--backend"},
      {{"--theme", "blue"}, "--theme"},
      {{"--batching", "dynamic"}, "--batching"},
      {{"--batch-wait", "-1"}, "--batch-wait"},
      {{"--activations", "q4_0"}, "--activations"},
      {{"--demo"}, "--demo"},
      {{"--clients", "2"}, "--demo"},
      {{"--sweep"}, "--demo"},
      {{"--screenshot", "/no/such/folder/x.png", "--demo", "x"}, "--screenshot"},
      {{"--frobnicate"}, "--frobnicate"},
      {{"--model", "/no/such/model.gguf"}, "--model"},
      {{"--lesson", "kv-cache"}, "--demo"},
      {{"--lecture"}, "--demo"},
      {{"--demo", "x", "--step", "2"}, "--lesson"},
      {{"--demo", "x", "--lesson", "kv-cache", "--step", "0"}, "--step"},
      {{"--demo", "x", "--lesson", "kv-cache", "--learn-tab", "quiz"}, "--learn-tab"},
      {{"--demo", "x", "--lesson", "kv-cache", "--answer", "3"}, "--question"},
      {{"--demo", "x", "--quant-types", "q8_0,q9_9"}, "--quant-types"},
      {{"--demo", "x", "--quant-block", "f16"}, "--quant-block"},
      {{"--quant-block", "q4_0"}, "--demo"},
  };
  for (const auto& [args, fault] : cases) {
    try {
      parse_gui_options(args);
      ADD_FAILURE() << "accepted " << fault;
    } catch (const GuiUsageError& error) {
      EXPECT_NE(std::string(error.what()).find(fault), std::string::npos) << error.what();
    }
  }
}

TEST(GuiOptions, RecordAndReplayTakeTheDemosViewOptionsAndRefuseWhatNeedsAnEngine) {
  const GuiOptions replay =
      parse_gui_options({"--replay", "run.sstrace", "--speed", "2.5", "--panel", "batching",
                         "--screenshot", "out.png", "--after-ms", "3000", "--lecture"});
  EXPECT_EQ(replay.replay, "run.sstrace");
  EXPECT_EQ(replay.replay_speed, 2.5);
  EXPECT_EQ(replay.panel, PanelId::kBatching);
  EXPECT_TRUE(replay.lecture);
  EXPECT_EQ(parse_gui_options({"--replay", "run.sstrace"}).replay_speed, 1.0);
  const GuiOptions record =
      parse_gui_options({"--record", "run.sstrace", "--demo", "Once", "--clients", "3"});
  EXPECT_EQ(record.record, "run.sstrace");
  const auto refusal = [](const std::vector<std::string>& args) {
    try {
      parse_gui_options(args);
      return std::string();
    } catch (const GuiUsageError& error) {
      return std::string(error.what());
    }
  };
  EXPECT_EQ(refusal({"--replay", "r", "--speed", "20"}),
            "--speed needs a number from 0.1 to 16, got '20'");
  EXPECT_EQ(refusal({"--replay", "r", "--speed", "fast"}),
            "--speed needs a number from 0.1 to 16, got 'fast'");
  EXPECT_EQ(refusal({"--speed", "2"}), "--speed needs --replay");
  EXPECT_EQ(refusal({"--replay", "r", "--record", "w"}),
            "--record and --replay: a replay runs no engine to record; choose one");
  EXPECT_EQ(refusal({"--replay", "r", "--demo", "Once"}),
            "--demo generates live and --replay plays a recording; choose one");
  EXPECT_EQ(refusal({"--replay", "r", "--clients", "4"}),
            "--classmates needs a live engine; --replay plays a recorded run without one");
  EXPECT_EQ(refusal({"--replay", "r", "--backend", "cpu"}),
            "--backend needs a live engine; --replay plays a recorded run without one");
  EXPECT_EQ(refusal({"--record", "/no/such/folder/run.sstrace"}),
            "--record /no/such/folder/run.sstrace: folder /no/such/folder does not exist");
}

}  // namespace
}  // namespace servescope::gui
