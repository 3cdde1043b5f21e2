// `servescope --run-lessons [DIR] [--lesson ID]... [--json]`: every lesson step's experiment,
// run headless in the window (offscreen platform, CPU backend, the bundled model) by the same
// StepRunner the Learn pane uses, one step after another. Per step: its measures and each
// expect condition as {"condition", "value", "passed"}. Ends the application with status 0
// when every condition of every step holds, 1 when one fails (or is not measured), an
// experiment stops, or a lesson file has a problem.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <filesystem>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/gui/lesson_ui/step_runner.h"
#include "app/lessons/lesson_set.h"

class QTimer;

namespace servescope::gui {

class MainWindow;

struct LessonRunPlan {
  std::filesystem::path folder;      // the lesson files
  std::vector<std::string> lessons;  // lesson ids to run; empty: every lesson
  bool json = false;                 // the report as JSON; otherwise a line per step
  int step_timeout_s = 600;          // an experiment still running then is cancelled
};

class LessonRun : public QObject {
  Q_OBJECT

 public:
  // Starts once the event loop runs; the window must outlive it.
  LessonRun(MainWindow& window, LessonRunPlan plan, std::ostream& out, std::ostream& err);

 private:
  void start();
  void next_step();
  void step_finished(const StepOutcome& outcome);
  void step_stopped(const QString& reason);
  void record(nlohmann::ordered_json step, bool passed);
  void finish();

  MainWindow& window_;
  LessonRunPlan plan_;
  std::ostream& out_;
  std::ostream& err_;
  StepRunner* runner_;
  QTimer* timeout_;
  lessons::LessonSet set_;
  std::vector<const lessons::Lesson*> lessons_;  // to run, in order
  size_t lesson_ = 0;
  size_t step_ = 0;
  QElapsedTimer step_clock_;
  QElapsedTimer run_clock_;
  QStringList notices_;  // the dispatcher's notices during the current step
  nlohmann::ordered_json report_;
  bool passed_ = true;
};

}  // namespace servescope::gui
