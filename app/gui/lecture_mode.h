// Lecture mode (F11): the window full screen for a hall, in large type and high contrast, with
// one lesson step (a strip across the top) and one panel at a time. A clicker-friendly key map:
//   Space, Page Down, Right   the next part of the step (advance_requested)
//   Page Up, Left             back (back_requested)
//   N, Shift+N                the next / previous lesson (lesson_requested)
//   P                          pause / resume the generation (single-step speed while paused)
//   S                          one decode step (pauses first)
//   M                          slow motion on / off
//   1 .. 6                     show panel 1 .. 6
//   Up, Down                   scroll a long step
//   T                          hide / show the step's text (the panel gets the whole screen)
//   Esc, F11                   leave
// The window's menu actions keep their keys while the menu bar is hidden (the theme's was dead).
// Sizes are in pixels for a 1280x720 projector: body text kBodyPx, the smallest text (chart
// tick labels, 0.9 of the body) smallest_font_px().
#pragma once

#include <QFont>
#include <QKeySequence>
#include <QObject>
#include <QString>
#include <vector>

#include "app/gui/engine_types.h"

class QAction;
class QDockWidget;
class QLabel;
class QScrollArea;
class QShortcut;

namespace servescope::gui {

class MainWindow;

class LectureMode : public QObject {
  Q_OBJECT

 public:
  static constexpr int kBodyPx = 24;

  explicit LectureMode(MainWindow& window);

  QAction* action() const { return action_; }  // checkable, F11
  bool active() const { return active_; }
  void set_active(bool on);
  // What the strip shows: the step's title and its Markdown (the learn pane's current part).
  void set_step(const QString& title, const QString& markdown);
  QString step_title() const;
  // The smallest text lecture mode paints, in pixels (the panels' tick labels).
  int smallest_font_px() const;
  // The body font lecture mode gives the window.
  QFont lecture_font() const;

 Q_SIGNALS:
  void advance_requested();
  void back_requested();
  void lesson_requested(int delta);  // +1 the next lesson, -1 the previous

 private:
  void add_key(const QKeySequence& key, std::function<void()> act);
  void toggle_pause();
  void single_step();
  void toggle_slow_motion();
  void scroll_by(int pages);
  void lend_keys(bool on);
  void carry_menu_actions(bool on);

  MainWindow& window_;
  QAction* action_;
  QDockWidget* strip_;
  QLabel* title_;
  QLabel* body_;
  QScrollArea* scroll_;
  std::vector<QShortcut*> keys_;
  std::vector<std::pair<QAction*, QKeySequence>> lent_;  // window actions whose key is lent
  std::vector<QAction*> carried_;  // menu actions the window carries while the menus hide
  bool active_ = false;
  // What lecture mode changed, to put back when it ends.
  QFont saved_font_;
  QFont saved_tooltip_font_;
  bool was_full_screen_ = false;
  bool was_maximized_ = false;
  Speed resume_speed_ = Speed::kRealTime;
};

}  // namespace servescope::gui
