// The replay's strip above the panels: "Replay of <date>, <device>" (it stays in lecture mode,
// which hides the toolbars), play / pause, one engine step, the position to seek, the speed.
// Its actions are the window's too, so their keys work while the menus are hidden.
#pragma once

#include <QWidget>

class QAction;
class QLabel;
class QSlider;

namespace servescope::gui {

class ReplayPlayer;

class ReplayBar : public QWidget {
  Q_OBJECT

 public:
  ReplayBar(ReplayPlayer& player, QWidget* window);

  // "Replay of 6 Dec 2026 16:20 UTC, <device>".
  QString banner() const;

 private:
  void show_position();

  ReplayPlayer& player_;
  QLabel* banner_;
  QLabel* time_;
  QSlider* seek_;
  QAction* play_;
};

// "Replay of 6 Dec 2026 16:20 UTC, AMD EPYC (CPU)": when and where the run was recorded.
QString replay_banner(const ReplayPlayer& player);

}  // namespace servescope::gui
