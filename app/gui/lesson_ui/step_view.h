// One lesson step, in the order the learner meets it: the text and a prediction to commit to
// (a choice, or a number with its unit), Run (the step's actions through the dispatcher, with
// progress and Cancel; the window keeps working), then what was measured beside the prediction
// and the explanation with the numbers just measured filled in. Every part wraps to the width
// it is given and takes the height it needs: the Learn pane scrolls the step as one.
#pragma once

#include <QString>
#include <QWidget>
#include <functional>
#include <optional>
#include <vector>

#include "app/lessons/generators.h"
#include "app/lessons/lesson.h"
#include "app/lessons/model_facts.h"
#include "app/gui/lesson_ui/step_runner.h"

class QButtonGroup;
class QDoubleSpinBox;
class QFrame;
class QGridLayout;
class QLabel;
class QProgressBar;
class QPushButton;
class QVBoxLayout;

namespace servescope::gui {

class ActionDispatcher;
class StepRunner;

// Where the step's figures come from.
struct StepContext {
  std::function<const lessons::ModelFacts*()> model;  // nullptr before a model is loaded
  std::function<lessons::Measurements()> measured;    // every measure the window has
};

class StepView : public QWidget {
  Q_OBJECT

 public:
  enum class Part { kPredict, kRunning, kObserve };

  StepView(ActionDispatcher& dispatcher, StepContext context, QWidget* parent = nullptr);

  void show_step(const lessons::Lesson& lesson, int index);
  Part part() const { return part_; }
  // Runs the experiment (or, with nothing to run, shows the explanation).
  void run();
  void cancel();
  // The learner's prediction: the chosen option's index, or the number; nullopt when none.
  std::optional<double> prediction() const;
  void set_prediction(double value);
  // Chooses the option `delta` on from the chosen one (wrapping; with none chosen, +1 is the
  // first and -1 the last) as a click on it would: lecture mode's keys. False where the step
  // asks no choice or its prediction is past (the experiment ran).
  bool step_choice(int delta);
  // The unit of the number the step asks for ("" for a count) while it is asked (the Predict
  // part); nullopt for a choice, a step that asks nothing, or after the run.
  std::optional<QString> number_unit() const;
  // The current part as Markdown (lecture mode's strip), without the prediction.
  QString part_markdown() const;
  // In the Predict part, the question and its options (the chosen one marked), or the number
  // predicted; empty in the other parts and for a step that asks nothing.
  QString prediction_markdown() const;
  // The explanation, and after it `explain_if_not` when a condition of the step did not hold.
  QString explanation_markdown() const;
  // The last run's measures and conditions; nullopt before the step ran.
  const std::optional<StepOutcome>& outcome() const { return outcome_; }
  // Shows a result the step's experiment gave before (the learner's progress), as if it had
  // just finished; the step shown must be the outcome's.
  void show_result(const StepOutcome& outcome);
  // The model's facts changed (a model became ready): the text's {{model.*}} are filled again;
  // the learner's prediction and any result stay.
  void refill();
  // An earlier step's measures, for the steps.<id>.* a later step's conditions read.
  void remember(const std::string& step_id, const lessons::StepMeasures& measures);

 Q_SIGNALS:
  void part_changed(servescope::gui::StepView::Part part);
  void predicted(const QString& step_id, double value);
  void prediction_changed();  // an option chosen or a number typed (nothing is recorded yet)
  void run_finished();  // the experiment completed: outcome() is its result

 private:
  void show_observations(StepOutcome outcome);
  QString filled(const std::string& markdown) const;
  // "**Predict:** " and the step's prediction prompt, filled.
  QString predict_line(const lessons::Step& step) const;
  QString measured_text(const std::string& measure) const;
  // The learner's prediction as the observe table shows it, or `none`.
  QString predicted_text_or(const QString& none) const;
  void clear_choices();
  void clear_observations();

  // One row of the observe table as shown.
  struct ObservedRow {
    QString label;
    QString measured;
  };

  ActionDispatcher& dispatcher_;
  StepRunner* runner_;
  std::optional<StepOutcome> outcome_;
  StepContext context_;
  const lessons::Lesson* lesson_ = nullptr;
  int index_ = 0;
  Part part_ = Part::kPredict;
  int run_index_ = 1;  // the run of the step under way, from 1
  int runs_ = 1;       // of how many (its repeat)

  QLabel* heading_;
  QLabel* text_;
  QLabel* predict_prompt_;
  QWidget* choices_;
  QVBoxLayout* choices_layout_;
  QButtonGroup* choice_group_;
  QWidget* number_row_;
  QDoubleSpinBox* number_;
  QLabel* number_unit_;
  QPushButton* run_;
  QPushButton* cancel_;
  QProgressBar* progress_;
  QLabel* progress_text_;  // the bar's words: which run, which action
  QLabel* status_;
  // The observe table: a grid of wrapping labels, so it fits any width the pane has.
  QFrame* observe_table_;
  QGridLayout* observe_grid_;
  std::vector<ObservedRow> observed_rows_;
  QLabel* explain_;
  // The measures as the run left them, read once when its observations are shown: the table
  // and the explanation's placeholders both come from it, so a later step of the engine
  // cannot rewrite one and not the other. Empty before a run.
  std::optional<lessons::Measurements> observed_;
};

}  // namespace servescope::gui
