// A lesson step's experiment as a test, on the real window: the StepRunner repeats a step and
// reports medians with their spread (and what `keep` took on each side), checks the step's
// expect conditions, and the Learn pane's StepView adds explain_if_not only when a claim does
// not hold. The fixture lesson is tests/data/lessons/run/00-claims.yaml.
#include <gtest/gtest.h>

#include <QTemporaryDir>
#include <memory>
#include <optional>

#include "app/gui/lesson_ui/action_dispatcher.h"
#include "app/gui/lesson_ui/learn_pane.h"
#include "app/gui/lesson_ui/lesson_ui.h"
#include "app/gui/window/main_window.h"
#include "app/gui/lesson_ui/step_runner.h"
#include "app/gui/lesson_ui/step_view.h"
#include "app/lessons/lesson_loader.h"
#include "tests/app/gui_test_support.h"
#include "tests/app/gui_window_support.h"

namespace servescope::gui {
namespace {

using testing::app;
using testing::wait_until;

lessons::Lesson claims_lesson() {
  lessons::LoadResult loaded =
      lessons::load_lesson_file(testing::kTestData + "/lessons/run/00-claims.yaml");
  EXPECT_TRUE(loaded.problems.empty());
  return loaded.lesson.value_or(lessons::Lesson{});
}

class StepRunnerFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    app();
    window_ = std::make_unique<MainWindow>(testing::test_window_options(cache_.path()));
    ASSERT_TRUE(wait_until([&] { return window_->engine_info().has_value(); }));
    lesson_ = claims_lesson();
    ASSERT_EQ(lesson_.steps.size(), 2u);
  }

  // Runs one step through a runner on the window's dispatcher; the outcome, or nullopt when the
  // run stopped.
  std::optional<StepOutcome> run(StepRunner& runner, size_t step) {
    std::optional<StepOutcome> outcome;
    bool stopped = false;
    const auto done = QObject::connect(&runner, &StepRunner::finished,
                                       [&](const StepOutcome& o) { outcome = o; });
    const auto failed =
        QObject::connect(&runner, &StepRunner::failed, [&](const QString&) { stopped = true; });
    runner.run(lesson_.steps[step]);
    EXPECT_TRUE(wait_until([&] { return outcome.has_value() || stopped; }, 240000));
    QObject::disconnect(done);
    QObject::disconnect(failed);
    return outcome;
  }

  QTemporaryDir cache_;
  std::unique_ptr<MainWindow> window_;
  lessons::Lesson lesson_;
};

TEST_F(StepRunnerFixture, ARepeatedStepReportsTheMedianAndSpreadOfEachSideAndChecksItsClaims) {
  StepRunner runner(window_->lessons().dispatcher());
  int runs_started = 0;
  QObject::connect(&runner, &StepRunner::repetition, [&](int, int) { ++runs_started; });
  const std::optional<StepOutcome> first = run(runner, 0);
  ASSERT_TRUE(first);
  EXPECT_EQ(runs_started, 2);
  // "Lily and Ben" is 4 tokens with the start token; all outputs but the last are retained.
  ASSERT_TRUE(first->measures.count("first.kv_tokens"));
  EXPECT_EQ(first->measures.at("first.kv_tokens").median, 15.0);
  EXPECT_EQ(first->measures.at("second.kv_tokens").median, 30.0);
  EXPECT_EQ(first->measures.at("kv_tokens").runs, 2);
  EXPECT_GT(first->measures.at("decode_ms_per_token").high, 0.0);
  ASSERT_EQ(first->conditions.size(), 3u);
  for (const lessons::ConditionResult& c : first->conditions) {
    EXPECT_EQ(c.passed, true) << c.condition << ": " << c.detail;
  }
  EXPECT_TRUE(first->holds());

  // The second step's claim reads the first step's measures and cannot hold.
  const std::optional<StepOutcome> second = run(runner, 1);
  ASSERT_TRUE(second);
  ASSERT_EQ(second->conditions.size(), 1u);
  EXPECT_EQ(second->conditions[0].passed, false);
  EXPECT_EQ(second->conditions[0].value, 30.0);
  EXPECT_TRUE(second->contradicted());

  // A new lesson forgets the earlier steps: the claim can then not be checked at all.
  runner.forget_steps();
  const std::optional<StepOutcome> alone = run(runner, 1);
  ASSERT_TRUE(alone);
  EXPECT_FALSE(alone->conditions[0].passed.has_value());
  EXPECT_FALSE(alone->contradicted());
  EXPECT_FALSE(alone->holds());
}

TEST_F(StepRunnerFixture, TheStepViewAddsTheOtherExplanationOnlyWhenAClaimFails) {
  StepContext context;
  context.model = [] { return nullptr; };
  context.measured = [] { return lessons::Measurements{}; };
  StepView view(window_->lessons().dispatcher(), context);
  view.show_step(lesson_, 0);
  view.run();
  ASSERT_TRUE(wait_until([&] { return view.part() == StepView::Part::kObserve; }, 240000));
  ASSERT_TRUE(view.outcome());
  EXPECT_TRUE(view.outcome()->holds());
  EXPECT_EQ(view.explanation_markdown(), "The cache holds 30 tokens.");

  view.show_step(lesson_, 1);
  view.run();
  ASSERT_TRUE(wait_until([&] { return view.part() == StepView::Part::kObserve; }, 240000));
  EXPECT_EQ(view.explanation_markdown(),
            "It holds 30 tokens.\n\nThis machine measured 30 tokens, as every machine would.");
}

// Lesson 2 ends with 31 classmates still writing; lesson 3 starts "alone". Sending the class
// home ends their requests at once, so the next request is not queued behind them (its TTFT
// read 0.6-1.8 s before).
TEST_F(StepRunnerFixture, SendingTheClassHomeEndsTheRequestsStillRunning) {
  ActionDispatcher& dispatcher = window_->lessons().dispatcher();
  bool done = false;
  QObject::connect(&dispatcher, &ActionDispatcher::finished, [&] { done = true; });
  const auto run = [&](std::vector<LessonAction> actions) {
    done = false;
    dispatcher.run(actions);
    return wait_until([&] { return done; }, 240000);
  };
  ASSERT_TRUE(run({{"set_classmates", 31}, {"generate", QVariantMap{{"max_tokens", 4}}}}));
  ASSERT_GT(window_->folder().blocks_used(), 0);  // the class goes on after the request
  // The engine falls idle (its records all folded when the window says so), the class's
  // blocks free: nothing runs on after the few steps already run.
  bool idle = false;
  QObject::connect(window_.get(), &MainWindow::engine_idle, [&] { idle = true; });
  ASSERT_TRUE(run({{"set_classmates", 0}}));
  const int64_t steps = window_->folder().counts().steps;
  ASSERT_TRUE(wait_until([&] { return idle; })) << "the class went on";
  EXPECT_EQ(window_->folder().blocks_used(), 0);
  EXPECT_LE(window_->folder().counts().steps - steps, 5);  // those already run, folded late
}

}  // namespace
}  // namespace servescope::gui
