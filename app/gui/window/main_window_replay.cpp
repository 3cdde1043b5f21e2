// Replay mode: a recorded run (trace_file.h) plays into the window through the engine worker's
// own reports (replay_player.h), with no model loaded and the engine's controls off.
#include <QSplitter>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>

#include "app/gui/lesson_ui/learn_pane.h"
#include "app/gui/lesson_ui/lesson_ui.h"
#include "app/gui/window/main_window.h"
#include "app/gui/recording/replay_bar.h"
#include "app/gui/recording/replay_player.h"

namespace servescope::gui {

void MainWindow::start_replay(const Trace& trace, double speed) {
  player_ = new ReplayPlayer(trace, *engine_, this);
  player_->set_speed(speed);
  // The bar goes above the panels (and the pinned figures), which lecture mode keeps on screen.
  auto* splitter = findChild<QSplitter*>("main-splitter");
  auto* column = qobject_cast<QVBoxLayout*>(findChild<QWidget*>("panel-column")->layout());
  column->insertWidget(0, new ReplayBar(*player_, this));
  // Nothing here drives an engine: the recording does.
  splitter->widget(0)->setEnabled(false);
  for (QToolBar* bar : findChildren<QToolBar*>()) bar->setEnabled(false);
  connect(player_, &ReplayPlayer::lesson_shown, this, &MainWindow::show_replayed_lesson);
  // From the event loop, as a live engine's first report comes: whoever waits for the
  // window's engine_ready (the scripted demo) has connected by then.
  QTimer::singleShot(0, player_, &ReplayPlayer::play);
}

void MainWindow::show_replayed_lesson(const QString& lesson, const QString& step) {
  LearnPane& learn = lessons_->learn();
  for (const lessons::Lesson* shown : learn.lessons()) {
    if (QString::fromStdString(shown->id) != lesson) continue;
    for (size_t i = 0; i < shown->steps.size(); ++i) {
      if (QString::fromStdString(shown->steps[i].id) == step) {
        learn.open_lesson(lesson, static_cast<int>(i));
        return;
      }
    }
  }
  // A lesson this installation does not have: the panels play on without its text.
}

void MainWindow::pace_replay(Speed speed) {
  if (speed == Speed::kSingleStep) {
    player_->pause();
  } else {
    player_->play();
  }
}

bool MainWindow::refused_in_replay() {
  if (!player_) return false;
  show_message(
      tr("This window replays a recorded run: no engine runs here. Start ServeScope without "
         "--replay to load a model and generate."),
      true);
  return true;
}

}  // namespace servescope::gui
