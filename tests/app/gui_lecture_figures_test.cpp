// What lecture mode keeps above the panel on a projector's screen (ctest runs this binary at
// 1280x720 and 1920x1080): the pinned figures in one line, so that every panel keeps its
// minimum height, and, while the run is recorded (--record), a mark that says so and names
// the file, as in the window outside lecture mode.
#include <gtest/gtest.h>

#include <QGuiApplication>
#include <QLabel>
#include <QScreen>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <filesystem>
#include <memory>

#include "app/gui/lesson_ui/learn_pane.h"
#include "app/gui/lesson_ui/lecture_mode.h"
#include "app/gui/lesson_ui/lesson_ui.h"
#include "app/gui/lesson_ui/pinned_figures.h"
#include "app/gui/panels/panel_host.h"
#include "app/gui/recording/recording_mark.h"
#include "app/gui/recording/trace_file.h"
#include "app/gui/window/main_window.h"
#include "tests/app/gui_test_support.h"
#include "tests/app/gui_window_support.h"

namespace servescope::gui {
namespace {

using testing::app;
using testing::wait_until;

class LectureFiguresFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    app();
    WindowOptions options = testing::lesson_window_options(cache_.path(), progress_.path());
    trace_path_ = std::filesystem::path(trace_folder_.path().toStdString()) / "class.sstrace";
    writer_ =
        std::make_shared<TraceWriter>(trace_path_, TraceHeader{kTraceVersion, trace_time_now()});
    options.record = writer_;
    window_ = std::make_unique<MainWindow>(options);
    window_->show();
    ASSERT_TRUE(wait_until([&] { return window_->engine_info().has_value(); }));
  }

  void start_lecture() {
    LessonUi& lessons = window_->lessons();
    ASSERT_TRUE(lessons.learn().open_lesson("batching", 0));
    lessons.lecture().set_active(true);
    const QSize screen = QGuiApplication::primaryScreen()->geometry().size();
    ASSERT_TRUE(wait_until([&] { return window_->size() == screen; }, 5000));
  }

  void generate_with_classmates(int classmates) {
    window_->set_classmates(classmates);
    window_->set_max_tokens(16);
    window_->generate();
    ASSERT_TRUE(wait_until([&] { return window_->generating(); }, 30000));
    ASSERT_TRUE(wait_until([&] { return !window_->generating(); }, 120000));
  }

  // Two frames of the window: the panels have their snapshots and the layout its sizes.
  void settle() {
    QSignalSpy frames(window_.get(), &MainWindow::frame_folded);
    ASSERT_TRUE(wait_until([&] { return frames.count() >= 2; }));
  }

  // SERVESCOPE_TEST_SHOTS=FOLDER keeps the window as the test saw it, to look at.
  void save_shot(const QString& name) {
    const QString folder = qEnvironmentVariable("SERVESCOPE_TEST_SHOTS");
    if (!folder.isEmpty()) window_->grab().save(folder + "/" + name + ".png");
  }

  QString screen_size() const {
    const QSize screen = QGuiApplication::primaryScreen()->geometry().size();
    return QString("%1x%2").arg(screen.width()).arg(screen.height());
  }

  RecordingMark* mark() const { return window_->findChild<RecordingMark*>("recording-mark"); }

  QTemporaryDir cache_;
  QTemporaryDir progress_;
  QTemporaryDir trace_folder_;
  std::filesystem::path trace_path_;
  std::shared_ptr<TraceWriter> writer_;
  std::unique_ptr<MainWindow> window_;
};

// At 1280x720 in 24 px type the two runs' figures wrapped to three lines and took the panel
// under its minimum height.
TEST_F(LectureFiguresFixture, PinnedFiguresTakeOneLineAndEveryPanelKeepsItsMinimumHeight) {
  ASSERT_NO_FATAL_FAILURE(start_lecture());
  ASSERT_NO_FATAL_FAILURE(generate_with_classmates(0));
  PinnedFigures& pinned = window_->pinned_figures();
  ASSERT_TRUE(pinned.pin());
  ASSERT_NO_FATAL_FAILURE(generate_with_classmates(16));
  QSignalSpy refreshed(&pinned, &PinnedFigures::refreshed);  // with the finished run's figures
  ASSERT_TRUE(wait_until([&] { return refreshed.count() >= 1; }));
  ASSERT_NO_FATAL_FAILURE(settle());
  QLabel* strip = pinned.strip();
  ASSERT_TRUE(strip->isVisibleTo(window_.get()));
  const QString shown = strip->text();
  EXPECT_TRUE(shown.startsWith("0 → 16 classmates: your TTFT ")) << shown.toStdString();
  EXPECT_LE(strip->fontMetrics().horizontalAdvance(shown), strip->contentsRect().width());
  EXPECT_LT(strip->height(), 2 * strip->fontMetrics().lineSpacing()) << "one line";
  // Whatever did not fit is in the tooltip: every figure of both runs.
  for (const HeadlineFigure& figure : pinned.pinned()->figures) {
    if (figure.value) {
      EXPECT_TRUE(strip->toolTip().contains(figure.label)) << figure.measure;
    }
  }
  for (const bool dark : {false, true}) {
    window_->set_dark_theme(dark);
    for (const PanelId id : kAllPanels) {
      window_->show_panel(id);
      ASSERT_NO_FATAL_FAILURE(settle());
      const widgets::PanelView* panel = window_->panels().panel(id);
      EXPECT_GE(panel->height(), panel->minimumSizeHint().height())
          << panel_title(id) << " at " << screen_size().toStdString();
    }
    save_shot(QString("lecture-pinned-%1-%2").arg(screen_size(), dark ? "dark" : "light"));
  }
  window_->set_dark_theme(false);
}

// `servescope --record class.sstrace`: nothing on screen said that a recording ran.
TEST_F(LectureFiguresFixture, ARecordingShowsItsFileAndGrowingSizeAlsoInLectureMode) {
  RecordingMark* recording = mark();
  ASSERT_NE(recording, nullptr);
  EXPECT_TRUE(recording->isVisibleTo(window_.get())) << "outside lecture mode";
  ASSERT_NO_FATAL_FAILURE(start_lecture());
  ASSERT_NO_FATAL_FAILURE(settle());
  const QString before = recording->text();
  EXPECT_TRUE(before.startsWith("Recording to class.sstrace, ")) << before.toStdString();
  ASSERT_NO_FATAL_FAILURE(generate_with_classmates(4));
  // The mark reads the file's size once a second: until it shows the run written.
  EXPECT_TRUE(wait_until(
      [&] {
        return recording->text() == recording_text("class.sstrace", writer_->bytes_written());
      },
      5000))
      << recording->text().toStdString();
  EXPECT_TRUE(recording->isVisibleTo(window_.get()));
  EXPECT_FALSE(recording->visibleRegion().isEmpty()) << "on screen, not covered";
  const QRect on_window(recording->mapTo(window_.get(), QPoint(0, 0)), recording->size());
  EXPECT_TRUE(window_->rect().contains(on_window));
  EXPECT_NE(recording->text(), before) << "its size grows as the run is written";
  EXPECT_EQ(writer_->bytes_written(), std::filesystem::file_size(trace_path_));  // flushed
  save_shot(QString("lecture-recording-%1").arg(screen_size()));
}

}  // namespace
}  // namespace servescope::gui
