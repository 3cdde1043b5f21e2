// Lecture mode on a projector's screen (the offscreen platform given a 1280x720 or 1920x1080
// screen: ctest runs this binary once per size): the real window in lecture mode with a class
// of 16 after a generation, each of the six panels in turn, light and dark. Every text the
// window paints (the step's strip, its keys, the panel) is whole, apart from every other and
// at least 7:1 against what is behind it, as rendered.
#include <gtest/gtest.h>

#include <QAction>
#include <QApplication>
#include <QGuiApplication>
#include <QScreen>
#include <QTemporaryDir>
#include <QToolTip>
#include <memory>

#include "app/gui/learn_pane.h"
#include "app/gui/lecture_mode.h"
#include "app/gui/lesson_ui.h"
#include "app/gui/main_window.h"
#include "app/gui/panel_host.h"
#include "tests/app/gui_test_support.h"
#include "tests/app/gui_window_support.h"
#include "tests/widgets/text_probe.h"

namespace servescope::gui {
namespace {

using testing::app;
using testing::wait_until;

class LectureFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    app();
    WindowOptions options = testing::lesson_window_options(cache_.path(), progress_.path());
    window_ = std::make_unique<MainWindow>(options);
    window_->show();
    ASSERT_TRUE(wait_until([&] { return window_->engine_info().has_value(); }));
    QApplication::setActiveWindow(window_.get());
  }

  // SERVESCOPE_TEST_SHOTS=FOLDER keeps the window as the test saw it, to look at.
  void save_shot(const QString& name) {
    const QString folder = qEnvironmentVariable("SERVESCOPE_TEST_SHOTS");
    if (!folder.isEmpty()) window_->grab().save(folder + "/" + name + ".png");
  }

  // The window's texts at this moment, each fault as one failure naming `where`.
  void expect_every_text_whole_apart_and_legible(const QString& where) {
    using widgets::testing::layout_faults;
    using widgets::testing::painted_texts;
    using widgets::testing::rendered_contrast;
    const auto texts = painted_texts(*window_);
    EXPECT_GE(texts.size(), 20u) << where.toStdString();
    for (const std::string& fault : layout_faults(texts, QRectF(window_->rect())))
      ADD_FAILURE() << where.toStdString() << ": " << fault;
    for (const auto& text : rendered_contrast(window_->grab().toImage(), texts)) {
      EXPECT_GE(text.ratio, 7.0) << where.toStdString() << ": \"" << text.text.text.toStdString()
                                 << "\" " << text.ink.name().toStdString() << " on "
                                 << text.background.name().toStdString();
    }
  }

  QTemporaryDir cache_;
  QTemporaryDir progress_;
  std::unique_ptr<MainWindow> window_;
};

QString key_of(PanelId id) {
  const std::string_view key = panel_key(id);
  return QString::fromUtf8(key.data(), static_cast<qsizetype>(key.size()));
}

TEST_F(LectureFixture, EveryPanelAfterAClassOf16IsWholeApartAndAtSevenToOne) {
  const QSize screen = QGuiApplication::primaryScreen()->geometry().size();
  const QString size = QString("%1x%2").arg(screen.width()).arg(screen.height());
  window_->set_classmates(16);
  window_->set_max_tokens(120);
  LessonUi& lessons = window_->lessons();
  ASSERT_TRUE(lessons.learn().open_lesson("batching", 0));
  lessons.lecture().action()->trigger();
  ASSERT_TRUE(lessons.lecture().active());
  // Tooltips at lecture size (they were 9 px tall), and back to the window's after.
  EXPECT_GE(QFontInfo(QToolTip::font()).pixelSize(), LectureMode::kBodyPx - 1);
  window_->generate();
  ASSERT_TRUE(wait_until([&] { return window_->folder().counts().steps > 40; }, 60000));
  window_->stop();
  ASSERT_TRUE(wait_until([&] { return !window_->generating(); }, 30000));
  ASSERT_TRUE(wait_until([&] { return window_->size() == screen; }, 5000))
      << "lecture mode fills the screen: " << window_->width() << "x" << window_->height();
  for (const bool dark : {false, true}) {
    window_->set_dark_theme(dark);
    for (const PanelId id : kAllPanels) {
      window_->show_panel(id);
      wait_until([] { return false; }, 100);  // laid out and painted
      const QString where = QString("%1 at %2, %3").arg(key_of(id), size, dark ? "dark" : "light");
      save_shot(QString("lecture-%1-%2-%3").arg(size, key_of(id), dark ? "dark" : "light"));
      expect_every_text_whole_apart_and_legible(where);
    }
  }
  window_->set_dark_theme(false);
  lessons.lecture().set_active(false);
  EXPECT_LT(QFontInfo(QToolTip::font()).pixelSize(), LectureMode::kBodyPx - 1);
}

}  // namespace
}  // namespace servescope::gui
