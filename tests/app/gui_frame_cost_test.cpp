// What the GUI thread pays per frame after a lesson's steps, on the real window: a student's
// window froze for minutes in lesson 0 ("What serving is"), step 4, while its highlight halo was
// built from hundreds of step bars at every repaint; and a step waited on frames after its
// generation had finished.
#include <gtest/gtest.h>

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "app/gui/lesson_ui/action_dispatcher.h"
#include "app/gui/window/main_window.h"
#include "app/lessons/lesson_loader.h"
#include "tests/app/gui_test_support.h"
#include "tests/app/gui_window_support.h"
#include "widgets/panel_view.h"

namespace servescope::gui {
namespace {

using testing::app;
using testing::wait_until;


class FrameCost : public ::testing::Test {
 protected:
  void SetUp() override {
    app();
    window_ = std::make_unique<MainWindow>(testing::test_window_options(cache_.path()));
    window_->resize(1600, 1000);
    window_->show();
    ASSERT_TRUE(wait_until([&] { return window_->engine_info().has_value(); }));
    dispatcher_ = std::make_unique<ActionDispatcher>(*window_);
    QObject::connect(dispatcher_.get(), &ActionDispatcher::finished,
                     [this] { done_ = "finished"; });
    QObject::connect(dispatcher_.get(), &ActionDispatcher::failed,
                     [this](const QString& reason) { done_ = "failed: " + reason; });
  }

  QString run(const lessons::Step& step) {
    done_.reset();
    dispatcher_->run(to_lesson_actions(step.run));
    if (!wait_until([&] { return done_.has_value(); }, 300000)) return "timed out";
    return *done_;
  }

  QTemporaryDir cache_;
  std::unique_ptr<MainWindow> window_;
  std::unique_ptr<ActionDispatcher> dispatcher_;
  std::optional<QString> done_;
};

// Lesson 0's four steps as a student runs them, then the Phases panel repainted with step 4's
// highlight over its hundreds of decode bars: one repaint, as every frame of a generation pays.
TEST_F(FrameCost, TheHighlightedPhasesPanelRepaintsQuicklyAfterLessonZerosSteps) {
  const lessons::Lesson serving = testing::shipped_lesson("serving");
  ASSERT_GE(serving.steps.size(), 4u);
  // Each step read for a moment, and step 4 run again, as the student did: the time line
  // stretches, so the decode bars become hundreds of thin, touching slivers.
  for (const size_t i : {0, 1, 2, 3, 3}) {
    ASSERT_EQ(run(serving.steps[i]), "finished") << serving.steps[i].id;
    ASSERT_FALSE(wait_until([] { return false; }, 1500));
  }
  widgets::PanelView& phases = *window_->panels().panel(PanelId::kPhases);
  ASSERT_EQ(phases.highlight(), "decode");
  ASSERT_TRUE(phases.isVisible());
  (void)phases.grab();  // the layout of the last paint
  const size_t decode_bars = phases.element_parts("decode").areas.size();
  ASSERT_GE(decode_bars, 400u) << "the steps made fewer decode steps than a student's session";
  QElapsedTimer timer;
  timer.start();
  (void)phases.grab();
  const double ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
  std::cout << "Phases panel with " << decode_bars << " decode bars highlighted: repainted in "
            << ms << " ms\n";
  // Seconds to minutes while the halo was built by path operations; tens of milliseconds
  // rasterised. A frame is 16 ms; a loaded 2-core machine may take several.
  EXPECT_LT(ms, 500.0) << decode_bars << " decode bars highlighted";
}

// When the window reports a finished generation, the request's record is already folded, so a
// lesson step that waits for it goes on at once, whatever the frames are doing.
TEST_F(FrameCost, AFinishedGenerationsRecordIsFoldedWhenTheWindowReportsIt) {
  bool folded_when_reported = false;
  bool reported = false;
  QObject::connect(window_.get(), &MainWindow::generation_finished, [&](GenerationEnd) {
    reported = true;
    for (const telemetry::RequestRecord& r : window_->folder().requests()) {
      if (r.request_id == window_->user_request()) folded_when_reported = true;
    }
  });
  window_->set_max_tokens(8);
  window_->generate();
  ASSERT_TRUE(wait_until([&] { return reported; }));
  EXPECT_TRUE(folded_when_reported);
}

}  // namespace
}  // namespace servescope::gui
