// A lesson's practice questions: choose or type an answer (a number may carry its unit), check
// it, and see the full working; an explain question shows its model answer and a self-check
// list to tick. A generated question is computed from the loaded model's real configuration,
// and "Run it" runs it in the window and shows the measured value beside the formula's.
#pragma once

#include <QString>
#include <QWidget>
#include <map>
#include <optional>
#include <string>

#include "app/gui/lesson_ui/step_view.h"
#include "app/lessons/answers.h"
#include "app/lessons/generators.h"
#include "app/lessons/lesson.h"

class QButtonGroup;
class QCheckBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPlainTextEdit;
class QPushButton;
class QVBoxLayout;

namespace servescope::gui {

class ActionDispatcher;
class PageScroll;

class PracticeView : public QWidget {
  Q_OBJECT

 public:
  PracticeView(ActionDispatcher& dispatcher, StepContext context, QWidget* parent = nullptr);

  void show_lesson(const lessons::Lesson& lesson);
  bool show_question(int index);
  int question_index() const { return index_; }
  // Answering as the learner would: the option index, the typed number, or the ticks.
  void choose(int option);
  void type_answer(const QString& text);
  void tick(int item, bool on);
  std::optional<lessons::AnswerResult> check();
  // Runs a generated question's confirmation in the window.
  void confirm();
  QString working_markdown() const;
  QString prompt_markdown() const;
  // The model's facts or the measures changed (a model became ready): the shown question's
  // figures are computed again.
  void refill();
  QString feedback() const;
  QString confirmation() const;
  // Answers given before ("lesson/question" -> right), marked in the question list.
  void set_answered(std::map<std::string, bool> answered);
  // The learner's last answer to each question ("lesson/question" -> the option's index, the
  // typed number or the explanation), put back when the question is shown: after a restart the
  // fields were empty beside the "right" marks.
  void set_given(std::map<std::string, QString> given);
  void mark_answered(const std::string& key, bool correct);

 Q_SIGNALS:
  void answered(const QString& lesson, const QString& question, const QString& given,
                const servescope::lessons::AnswerResult& result);

 private:
  const lessons::Question& question() const;
  QString filled(const std::string& markdown, const std::optional<std::string>& answer) const;
  void refresh_generated();
  void show_prompt();
  void restore_given();

  ActionDispatcher& dispatcher_;
  StepContext context_;
  const lessons::Lesson* lesson_ = nullptr;
  int index_ = -1;
  std::optional<lessons::GeneratedAnswer> generated_;
  QString generated_problem_;
  bool confirming_ = false;
  std::map<std::string, bool> answered_;
  std::map<std::string, QString> given_;

  QListWidget* list_;
  QLabel* prompt_;
  QWidget* choices_;
  QVBoxLayout* choices_layout_;
  QButtonGroup* choice_group_;
  QLineEdit* number_;
  QPlainTextEdit* explanation_;
  QWidget* self_check_;
  QVBoxLayout* self_check_layout_;
  std::vector<QCheckBox*> self_checks_;  // in self_check_layout_'s rows, in order
  QPushButton* check_;
  QPushButton* confirm_;
  QLabel* feedback_;
  QLabel* confirmation_;
  QLabel* working_;
  PageScroll* page_;
};

}  // namespace servescope::gui
