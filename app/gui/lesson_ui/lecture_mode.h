// Lecture mode (F11): the window full screen for a hall, in large type and high contrast, with
// one lesson step (a strip across the top) and one panel at a time. A clicker-friendly key map:
//   Space, Page Down, Right   the next part: the lesson's introduction, then each step's
//                             prediction, its run, what it measured (advance_requested)
//   Page Up, Left             back (back_requested)
//   O, Shift+O                the class's prediction: the next / previous option
//                             (choice_requested), recorded as a click on it is; for a
//                             number, a box in the strip to type it in (ask_number; Return
//                             takes it, Esc not; meanwhile the keys type)
//   R                          run this step's experiment again (rerun_requested)
//   N, Shift+N                the next / previous lesson (lesson_requested)
//   P                          pause / resume the generation (single-step speed while paused)
//   S                          one decode step (pauses first)
//   M                          slow motion on / off
//   1 .. 6                     show panel 1 .. 6
//   Up, Down                   scroll a long step
//   T                          hide / show the step's text (the panel gets the whole screen)
//   Esc, F11                   leave
// and the class's "what if" questions, each through the window's own control (so settings,
// a lesson's given-back settings and the status bar follow) and confirmed in the strip:
//   Return                     generate (the answer to a "what if" is a run)
//   K                          pin the last run's figures above the panel / unpin them
//   D                          dark / light theme
//   C, Shift+C                 more / fewer classmates (0, 1, 2, 4, 8, 16, 32)
//   Q, Shift+Q                 the next / previous weight type (as loaded, F16, Q8_0, Q4_0)
//   A                          continuous / static batching
//   W, Shift+W                 a longer / shorter batch wait (0, 50, 100, 200, 500, 1000, 2000 ms)
//   G                          the next backend (CPU, each Vulkan device)
// B and "." are left alone: clickers send them for a black screen.
// The window's menu actions keep their keys while the menu bar is hidden (the theme's was dead).
// The window takes exactly the geometry of the screen it is on, also where no window manager
// sizes a full-screen window (Xvfb, a kiosk), and gets its own geometry back on leaving.
// Long work (a timing model written, a model loading, weights quantised, a sweep) shows in the
// strip with its progress, since the status bar is hidden.
// Sizes are in pixels for a 1280x720 projector: body text kBodyPx, the smallest text (chart
// tick labels, 0.9 of the body) smallest_font_px().
// The strip is a third of the screen high, except before a step's run (a lesson's
// introduction, a step asking its prediction, until a generation shows on the panel): then
// it grows to the text, question and options, up to what leaves the panels their minimum
// height. The question and options never scroll (the class must see what it is asked before
// Space runs the experiment); the text above them scrolls when it must, and a cue beside the
// title says so while more is below.
#pragma once

#include <QFont>
#include <QKeySequence>
#include <QObject>
#include <QRect>
#include <QString>
#include <functional>
#include <vector>

#include "app/gui/engine_bridge/engine_types.h"

class QAction;
class QDockWidget;
class QDoubleSpinBox;
class QLabel;
class QProgressBar;
class QScrollArea;
class QShortcut;
class QTimer;

namespace servescope::gui {

class MainWindow;

class LectureMode : public QObject {
  Q_OBJECT

 public:
  static constexpr int kBodyPx = 24;
  static constexpr int kNoticeMs = 4000;

  explicit LectureMode(MainWindow& window);

  QAction* action() const { return action_; }  // checkable, F11
  bool active() const { return active_; }
  void set_active(bool on);
  // What the strip shows: the step's title, its Markdown (the learn pane's current part) and
  // the prediction asked before its run (empty: none); before_run: nothing of the step is on
  // the panel yet (a lesson's introduction, a step's question), so the strip may grow.
  void set_step(const QString& title, const QString& markdown, const QString& prediction = {},
                bool before_run = false);
  QString step_title() const;
  // Shows `text` in the strip for a few seconds (the toolbar that would show it is hidden).
  void say(const QString& text, int ms = kNoticeMs);
  // A box under the question for the class's number (`unit` after it), focused; Return emits
  // number_entered, Esc closes it. Lecture mode's keys type into it meanwhile.
  void ask_number(double now, const QString& unit);
  bool asking_number() const;
  // The strip's short confirmation of the last key's change ("Classmates: 16") or failure,
  // empty once it has gone; the long work's progress line, empty when none runs.
  QString notice() const;
  QString progress_line() const;
  // The smallest text lecture mode paints, in pixels (the panels' tick labels).
  int smallest_font_px() const;
  // The body font lecture mode gives the window.
  QFont lecture_font() const;

 Q_SIGNALS:
  void advance_requested();
  void back_requested();
  void lesson_requested(int delta);  // +1 the next lesson, -1 the previous
  void choice_requested(int delta);  // the class's prediction: +1 the next option, -1 the previous
  void rerun_requested();
  void number_entered(double value);

 private:
  // The single keys lecture mode answers to (lecture_keys.cpp).
  void bind_keys();
  void add_key(const QKeySequence& key, std::function<void()> act);
  void toggle_pause();
  void single_step();
  void toggle_slow_motion();
  void step_classmates(int delta);
  void step_batch_wait(int delta);
  void toggle_batching();
  void toggle_theme();
  void toggle_pin();
  void show_progress();
  void update_notice_row();
  void fill_screen();
  void close_number(bool take);
  bool eventFilter(QObject* watched, QEvent* event) override;
  // The strip's height for what it shows now (see above), and the "more below" cue.
  void fit_strip();
  int strip_ceiling(const QRect& screen) const;
  void update_more_cue();
  void ran_something();
  QWidget* build_notice_row();
  void scroll_by(int pages);
  void lend_keys(bool on);
  void carry_menu_actions(bool on);

  MainWindow& window_;
  QAction* action_;
  QDockWidget* strip_;
  QLabel* title_;
  QLabel* body_;
  QScrollArea* scroll_;
  QLabel* more_;     // "more below" beside the title, while the text scrolls
  QLabel* predict_;  // the question and its options, under the text, never scrolled
  QWidget* number_row_;  // the class's number typed in (ask_number)
  QDoubleSpinBox* number_;
  QLabel* key_legend_;
  QWidget* content_;
  QWidget* notice_row_;  // shown while it has something to say
  QLabel* notice_;
  QLabel* progress_text_;
  QProgressBar* progress_bar_;
  QTimer* notice_timer_;
  QTimer* progress_timer_;  // the seconds tick on while long work runs
  std::vector<QShortcut*> keys_;
  std::vector<std::pair<QAction*, QKeySequence>> lent_;  // window actions whose key is lent
  std::vector<QAction*> carried_;  // menu actions the window carries while the menus hide
  bool active_ = false;
  bool before_run_ = false;  // the strip may grow (set_step)
  // What lecture mode changed, to put back when it ends.
  QFont saved_font_;
  QFont saved_tooltip_font_;
  bool was_full_screen_ = false;
  bool was_maximized_ = false;
  QRect saved_geometry_;
  QMetaObject::Connection screen_resized_;
  Speed resume_speed_ = Speed::kRealTime;
};

}  // namespace servescope::gui
