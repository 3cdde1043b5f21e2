// Runs one lesson step's experiment the way the window and `servescope --run-lessons` both do:
// its actions through the ActionDispatcher, `repeat` times in a row, every measure read after
// each run, then the step's expect conditions checked against the medians and spreads (and the
// lesson's earlier steps' measures, for steps.<id>.<measure>).
#pragma once

#include <QObject>
#include <QString>
#include <map>
#include <string>
#include <vector>

#include "app/lessons/expectation.h"
#include "app/lessons/lesson.h"

namespace servescope::gui {

class ActionDispatcher;

struct StepOutcome {
  std::string step_id;
  lessons::StepMeasures measures;  // every measure that had a value, over the runs
  std::vector<lessons::ConditionResult> conditions;

  // A condition evaluated false: the claim does not hold on this machine.
  bool contradicted() const;
  // Every condition evaluated true (none false, none unmeasured).
  bool holds() const;
};

class StepRunner : public QObject {
  Q_OBJECT

 public:
  explicit StepRunner(ActionDispatcher& dispatcher, QObject* parent = nullptr);

  // Runs the step (`step` must outlive the run); finished(), failed() or cancelled() ends it.
  // A step without actions is measured once, as things stand, and finishes at once.
  void run(const lessons::Step& step);
  // The step's outcome from what the window has measured now, without running anything.
  StepOutcome measure_now(const lessons::Step& step);
  void cancel();
  bool busy() const { return step_ != nullptr; }
  // A new lesson: the earlier steps' measures (steps.<id>.*) are forgotten.
  void forget_steps() { earlier_.clear(); }
  // A step's measures from before (a kept result), for steps.<id>.*.
  void remember(const std::string& step_id, const lessons::StepMeasures& measures) {
    earlier_[step_id] = measures;
  }

 Q_SIGNALS:
  void repetition(int run, int runs);  // before each run, from 1
  void finished(const servescope::gui::StepOutcome& outcome);
  void failed(const QString& reason);
  void cancelled();

 private:
  void start_run();
  void record_run();
  StepOutcome conclude(const lessons::Step& step);

  ActionDispatcher& dispatcher_;
  const lessons::Step* step_ = nullptr;  // the step running; nullptr when idle
  int runs_done_ = 0;
  std::map<std::string, std::vector<double>> samples_;      // measure -> one value per run
  std::map<std::string, lessons::StepMeasures> earlier_;  // step id -> its measures
};

}  // namespace servescope::gui
