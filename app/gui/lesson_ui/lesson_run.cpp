#include "app/gui/lesson_ui/lesson_run.h"

#include <QCoreApplication>
#include <QTimer>
#include <algorithm>
#include <cstdio>
#include <ostream>

#include "app/gui/lesson_ui/action_dispatcher.h"
#include "app/gui/lesson_ui/lesson_ui.h"
#include "app/gui/window/main_window.h"

namespace servescope::gui {
namespace {

using Json = nlohmann::ordered_json;

double seconds(const QElapsedTimer& clock) {
  return static_cast<double>(clock.elapsed()) / 1000.0;
}

// Three significant figures are what the report's times need.
Json rounded(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return std::stod(text);
}

// One run: the number; several: the median with its spread.
Json sample_json(const lessons::Sample& s) {
  if (s.runs == 1) return s.median;
  return Json{{"median", s.median}, {"min", s.low}, {"max", s.high}, {"runs", s.runs}};
}

// The step's own measures: those it observes, then those its conditions read.
std::vector<std::string> reported_measures(const lessons::Step& step) {
  std::vector<std::string> names;
  const auto add = [&](const std::string& name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  };
  for (const lessons::Observation& o : step.observe) add(o.measure);
  for (const lessons::Expectation& e : step.expect) {
    if (!e.expression) continue;
    for (const lessons::NameRef& n : lessons::names_read(*e.expression)) {
      if (n.step.empty()) add(n.written());
    }
  }
  return names;
}

Json condition_json(const lessons::ConditionResult& c) {
  Json j{{"condition", c.condition},
         {"value", c.value ? Json(*c.value) : Json(nullptr)},
         {"passed", c.passed == true}};
  j["detail"] = c.detail;
  return j;
}

}  // namespace

LessonRun::LessonRun(MainWindow& window, LessonRunPlan plan, std::ostream& out, std::ostream& err)
    : QObject(&window),
      window_(window),
      plan_(std::move(plan)),
      out_(out),
      err_(err),
      runner_(new StepRunner(window.lessons().dispatcher(), this)),
      timeout_(new QTimer(this)) {
  timeout_->setSingleShot(true);
  connect(timeout_, &QTimer::timeout, this, [this] {
    notices_.push_back(
        QString("still running after %1 s: cancelled").arg(plan_.step_timeout_s));
    runner_->cancel();
  });
  connect(runner_, &StepRunner::finished, this, &LessonRun::step_finished);
  connect(runner_, &StepRunner::failed, this, &LessonRun::step_stopped);
  connect(runner_, &StepRunner::cancelled, this,
          [this] { step_stopped("the experiment was cancelled"); });
  connect(&window.lessons().dispatcher(), &ActionDispatcher::notice, this,
          [this](const QString& text) { notices_.push_back(text); });
  QTimer::singleShot(0, this, &LessonRun::start);
}

void LessonRun::start() {
  run_clock_.start();
  set_ = lessons::load_lesson_set(plan_.folder);
  Json problems = Json::array();
  for (const lessons::Problem& p : set_.problems) {
    problems.push_back(p.to_string());
    err_ << p.to_string() << "\n";
  }
  passed_ = set_.problems.empty();
  report_["problems"] = problems;
  report_["lessons"] = Json::array();
  for (const std::string& id : plan_.lessons) {
    const auto& all = set_.lessons;
    if (std::none_of(all.begin(), all.end(), [&](const lessons::Lesson& l) { return l.id == id; })) {
      err_ << "servescope: --lesson " << id << ": no lesson of that id in "
           << plan_.folder.string() << "\n";
      QCoreApplication::exit(2);
      return;
    }
  }
  for (const lessons::Lesson* l : set_.usable()) {
    const auto& only = plan_.lessons;
    if (only.empty() || std::find(only.begin(), only.end(), l->id) != only.end()) {
      lessons_.push_back(l);
    }
  }
  next_step();
}

void LessonRun::next_step() {
  while (lesson_ < lessons_.size() && step_ >= lessons_[lesson_]->steps.size()) {
    ++lesson_;
    step_ = 0;
  }
  if (lesson_ >= lessons_.size()) return finish();
  const lessons::Lesson& lesson = *lessons_[lesson_];
  if (step_ == 0) {
    runner_->forget_steps();
    report_["lessons"].push_back(Json{{"id", lesson.id}, {"passed", true}, {"seconds", 0.0},
                                      {"steps", Json::array()}});
  }
  notices_.clear();
  step_clock_.start();
  timeout_->start(plan_.step_timeout_s * 1000);
  runner_->run(lesson.steps[step_]);
}

void LessonRun::step_finished(const StepOutcome& outcome) {
  timeout_->stop();
  const lessons::Step& step = lessons_[lesson_]->steps[step_];
  Json measures = Json::object();
  for (const std::string& name : reported_measures(step)) {
    const auto it = outcome.measures.find(name);
    measures[name] = it == outcome.measures.end() ? Json(nullptr) : sample_json(it->second);
  }
  Json conditions = Json::array();
  for (const lessons::ConditionResult& c : outcome.conditions) {
    conditions.push_back(condition_json(c));
  }
  record(Json{{"id", step.id},
              {"runs", step.run.empty() ? 0 : step.repeat},
              {"seconds", rounded(seconds(step_clock_))},
              {"measures", measures},
              {"conditions", conditions}},
         outcome.holds());
}

void LessonRun::step_stopped(const QString& reason) {
  timeout_->stop();
  const lessons::Step& step = lessons_[lesson_]->steps[step_];
  record(Json{{"id", step.id},
              {"seconds", rounded(seconds(step_clock_))},
              {"error", reason.toStdString()}},
         false);
}

void LessonRun::record(Json step, bool passed) {
  if (!notices_.isEmpty()) step["notices"] = notices_.join("; ").toStdString();
  step["passed"] = passed;
  Json& lesson = report_["lessons"].back();
  lesson["passed"] = lesson["passed"].get<bool>() && passed;
  lesson["seconds"] = rounded(lesson["seconds"].get<double>() + step["seconds"].get<double>());
  passed_ = passed_ && passed;
  // Progress on stderr, so a long run shows where it is.
  err_ << lessons_[lesson_]->id << "/" << step["id"].get<std::string>() << ": "
       << step["seconds"].get<double>() << " s, " << (passed ? "holds" : "FAILS");
  if (step.contains("error")) err_ << " (" << step["error"].get<std::string>() << ")";
  for (const Json& c : step.value("conditions", Json::array())) {
    if (!c["passed"].get<bool>()) {
      err_ << "\n  not: " << c["condition"].get<std::string>() << "  ["
           << c["detail"].get<std::string>() << "]";
    }
  }
  err_ << std::endl;
  lesson["steps"].push_back(std::move(step));
  ++step_;
  QTimer::singleShot(0, this, &LessonRun::next_step);
}

void LessonRun::finish() {
  report_["passed"] = passed_;
  report_["seconds"] = rounded(seconds(run_clock_));
  if (plan_.json) {
    out_ << report_.dump(2) << std::endl;
  } else {
    for (const Json& lesson : report_["lessons"]) {
      out_ << (lesson["passed"].get<bool>() ? "pass " : "FAIL ") << lesson["id"].get<std::string>()
           << " (" << lesson["seconds"].get<double>() << " s)\n";
    }
    out_ << (passed_ ? "every condition holds" : "not everything holds (stderr says what)") << " ("
         << report_["seconds"].get<double>() << " s)" << std::endl;
  }
  QCoreApplication::exit(passed_ ? 0 : 1);
}

}  // namespace servescope::gui
