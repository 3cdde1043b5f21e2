// The Learn pane: the lesson list (with each lesson's progress) and, for the chosen lesson,
// its steps (StepView), its practice questions and its flashcards. It moves through a lesson
// step by step; lecture mode drives the same moves with its keys. The lesson's introduction
// (on its first step) and the step scroll as one page, by mouse wheel and keyboard, with
// Back and Next always in view under it.
#pragma once

#include <QString>
#include <QWidget>
#include <map>

#include "app/gui/lesson_ui/flashcard_view.h"
#include "app/gui/lesson_ui/practice_view.h"
#include "app/gui/lesson_ui/step_view.h"
#include "app/lessons/lesson_set.h"

class QLabel;
class QListWidget;
class QPushButton;
class QScrollArea;
class QTabWidget;

namespace servescope::gui {

class LearnPane : public QWidget {
  Q_OBJECT

 public:
  LearnPane(ActionDispatcher& dispatcher, StepContext context, QWidget* parent = nullptr);

  // The lessons the pane offers: those of the set whose files have no problem.
  void set_lessons(lessons::LessonSet set);
  const std::vector<const lessons::Lesson*>& lessons() const { return usable_; }
  // Opens a lesson at a step; false for an unknown id or step.
  bool open_lesson(const QString& id, int step = 0);
  const lessons::Lesson* current_lesson() const { return current_; }
  int current_step() const { return step_; }
  StepView& step_view() { return *step_view_; }
  PracticeView& practice() { return *practice_; }
  FlashcardView& flashcards() { return *flashcards_; }
  // A line for the learner above the tabs (a progress file set aside, a failed save).
  void show_notice(const QString& text);
  QString notice() const;
  QTabWidget& tabs() { return *tabs_; }
  // Steps reached per lesson id (shown in the list); the progress store restores it.
  void set_reached(const QString& lesson, int steps);

  // A model became ready: the open lesson's text and question are filled with its facts.
  void refill();

  void next();
  void back();
  // The next (+1) or previous (-1) lesson in the list, at its first step; false at an end.
  bool open_adjacent_lesson(int delta);
  // One press of the lecture key: from the lesson's introduction to its first step, run the
  // step's experiment, else go to the next step (after a lesson's last step, the next lesson).
  void advance();
  // Lecture mode's page before a lesson's first step: its title and introduction. A lesson
  // opened at its first step starts there; back() from the first step returns to it; moving
  // on or running the step leaves it. (The pane shows the introduction above the first step.)
  bool at_introduction() const { return at_introduction_; }
  // The step as lecture mode shows it: its title, the current part's Markdown and the step's
  // prediction (StepView::prediction_markdown); on the introduction, the lesson's.
  QString step_title() const;
  QString step_markdown() const;
  QString prediction_markdown() const;

 Q_SIGNALS:
  void position_changed(const QString& lesson, const QString& step);
  // Another lesson is about to open in place of the current one.
  void leaving_lesson();
  void step_shown();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void fill_list();
  void fit_list_height();
  void show_current_step();
  void fill_intro();
  QString intro_markdown() const;  // the introduction, the model's figures filled in

  ActionDispatcher& dispatcher_;
  StepContext context_;
  lessons::LessonSet set_;
  std::vector<const lessons::Lesson*> usable_;
  const lessons::Lesson* current_ = nullptr;
  int step_ = 0;
  bool at_introduction_ = false;
  std::map<QString, int> reached_;

  QListWidget* list_;
  QLabel* problems_;
  QTabWidget* tabs_;
  QScrollArea* step_scroll_;
  QLabel* intro_;
  StepView* step_view_;
  PracticeView* practice_;
  FlashcardView* flashcards_;
  QLabel* notice_;
  QPushButton* back_;
  QPushButton* next_;
};

}  // namespace servescope::gui
