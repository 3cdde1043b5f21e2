#include "app/gui/lesson_ui/step_runner.h"

#include <QTimer>
#include <algorithm>

#include "app/gui/lesson_ui/action_dispatcher.h"
#include "app/lessons/vocabulary.h"

namespace servescope::gui {

bool StepOutcome::contradicted() const {
  return std::any_of(conditions.begin(), conditions.end(),
                     [](const lessons::ConditionResult& c) { return c.passed == false; });
}

bool StepOutcome::holds() const {
  return std::all_of(conditions.begin(), conditions.end(),
                     [](const lessons::ConditionResult& c) { return c.passed == true; });
}

StepRunner::StepRunner(ActionDispatcher& dispatcher, QObject* parent)
    : QObject(parent), dispatcher_(dispatcher) {
  // The dispatcher also runs other things (a question's confirm run): only this runner's
  // runs are followed here.
  connect(&dispatcher_, &ActionDispatcher::finished, this, [this] {
    if (!busy()) return;
    record_run();
    if (runs_done_ < step_->repeat) return start_run();
    const lessons::Step& step = *step_;
    step_ = nullptr;
    Q_EMIT finished(conclude(step));
  });
  connect(&dispatcher_, &ActionDispatcher::failed, this, [this](const QString& reason) {
    if (!busy()) return;
    step_ = nullptr;
    Q_EMIT failed(reason);
  });
  connect(&dispatcher_, &ActionDispatcher::cancelled, this, [this] {
    if (!busy()) return;
    step_ = nullptr;
    Q_EMIT cancelled();
  });
}

void StepRunner::run(const lessons::Step& step) {
  if (busy() || dispatcher_.busy()) {
    Q_EMIT failed(tr("An experiment is already running; wait for it or cancel it."));
    return;
  }
  samples_.clear();
  runs_done_ = 0;
  if (step.run.empty()) {
    QTimer::singleShot(0, this, [this, &step] { Q_EMIT finished(measure_now(step)); });
    return;
  }
  step_ = &step;
  start_run();
}

StepOutcome StepRunner::measure_now(const lessons::Step& step) {
  samples_.clear();
  record_run();
  return conclude(step);
}

void StepRunner::cancel() {
  if (busy()) dispatcher_.cancel();
}

void StepRunner::start_run() {
  Q_EMIT repetition(runs_done_ + 1, static_cast<int>(step_->repeat));
  dispatcher_.run(to_lesson_actions(step_->run));
}

void StepRunner::record_run() {
  ++runs_done_;
  for (const lessons::MeasureSpec& spec : lessons::measure_specs()) {
    const MeasureValue v = dispatcher_.measure(spec.name);
    if (v.value) samples_[std::string(spec.name)].push_back(*v.value);
  }
  if (!busy()) return;  // measured without a run: nothing of this step was kept
  for (const auto& [kept, measures] : dispatcher_.kept()) {
    for (const auto& [name, value] : measures) samples_[kept + "." + name].push_back(value);
  }
}

StepOutcome StepRunner::conclude(const lessons::Step& step) {
  StepOutcome outcome;
  outcome.step_id = step.id;
  for (auto& [name, values] : samples_) outcome.measures[name] = lessons::summarise(values);
  const lessons::ExpectationInputs inputs{&outcome.measures, &earlier_};
  for (const lessons::Expectation& e : step.expect) {
    outcome.conditions.push_back(lessons::evaluate(e, inputs));
  }
  earlier_[step.id] = outcome.measures;
  return outcome;
}

}  // namespace servescope::gui
