// Runs a lesson's declarative actions (the action vocabulary of app/lessons: load_model,
// set_kv_type, generate, batch_sweep, highlight, ...) on the window, one after another,
// through the window's public actions: the same ones the toolbar, the demo and the tests use.
// An action that waits for the engine (a load, a generation, a sweep) completes when the
// window's signal says so; nothing here blocks the GUI thread. Progress, cancel, and a failure
// with a sentence a person can act on.
#pragma once

#include <QObject>
#include <QString>
#include <QVariant>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "app/gui/lesson_ui/measure_reader.h"
#include "app/gui/panels/panel_id.h"
#include "app/gui/engine_bridge/timing_models.h"
#include "app/lessons/lesson.h"

class QTimer;

namespace servescope::gui {

class MainWindow;

// One action as a lesson names it: the vocabulary's name and its argument (a string, number or
// bool, or a map such as {max_tokens: 100}; an empty map or invalid QVariant for none).
struct LessonAction {
  QString name;
  QVariant argument;
};

// A lesson file's action (app/lessons), its argument typed by the action vocabulary.
LessonAction to_lesson_action(const lessons::Action& action);
std::vector<LessonAction> to_lesson_actions(const std::vector<lessons::Action>& actions);

class ActionDispatcher : public QObject {
  Q_OBJECT

 public:
  // Tokens generated on each timing model of a size sweep (batch 1, no classmates).
  static constexpr int kSizeSweepTokens = 24;

  explicit ActionDispatcher(MainWindow& window, QObject* parent = nullptr);
  ~ActionDispatcher() override;

  // Every action name run() knows, in the vocabulary's order.
  static const std::vector<std::string_view>& implemented_actions();

  // Runs the actions in order; finished(), failed(reason) or cancelled() ends the run. A run
  // started while another is busy fails at once.
  void run(const std::vector<LessonAction>& actions);
  // Why the action cannot run as written (an unknown name, a bad argument), or empty.
  QString check(const LessonAction& action);
  // Ends the run: a generation it started is stopped; a batch sweep or a timing model being
  // written finishes in the background (their results still reach the window).
  void cancel();
  bool busy() const { return busy_; }
  // No panel points at anything: a lesson's highlight ends with the lesson (or the next run).
  void clear_highlights();

  // What timing:SIZE loads: by default the window's F32 presets; tests pass tiny ones.
  void set_timing_models(std::vector<TimingModel> models) { timing_models_ = std::move(models); }
  // What the current (or last) run's keep actions took: name -> measure -> value.
  const std::map<std::string, std::map<std::string, double>>& kept() const { return kept_; }
  // The last size sweep's points (kept across runs; a new size sweep replaces them).
  const std::vector<SizeSweepPoint>& size_sweep() const { return size_sweep_; }
  // The measures of the measure vocabulary, read from the window and this size sweep (counts
  // such as evictions: since the last run started).
  MeasureValue measure(std::string_view name) const;

 Q_SIGNALS:
  // A run began, or it ended (before its finished(), failed() or cancelled()). A run refused
  // at once (busy, a bad argument) neither starts nor ends.
  void started();
  void ended();
  void progress(int done, int total, const QString& what);
  void notice(const QString& text);  // something the learner should know; the run goes on
  void finished();
  void failed(const QString& reason);
  void cancelled();

 private:
  struct Task {
    QString what;                 // "Loading the bundled model", for progress
    std::function<void()> start;  // ends with complete() or fail(), now or later
  };

  std::vector<Task> tasks_for(const LessonAction& action);
  // One member per action (action_table.cpp), and the table from the action's name to it.
  using TaskMaker = std::vector<Task> (ActionDispatcher::*)(const LessonAction&);
  static const std::map<std::string_view, TaskMaker>& task_makers();
  // A task that does `act` at once and is done.
  Task now(QString what, std::function<void()> act);
  std::vector<Task> tasks_load_model(const LessonAction& a);
  std::vector<Task> tasks_set_backend(const LessonAction& a);
  std::vector<Task> tasks_set_kv_type(const LessonAction& a);
  std::vector<Task> tasks_set_kv_cache(const LessonAction& a);
  std::vector<Task> tasks_pin(const LessonAction& a);
  std::vector<Task> tasks_set_classmates(const LessonAction& a);
  std::vector<Task> tasks_set_batching(const LessonAction& a);
  std::vector<Task> tasks_set_batch_wait(const LessonAction& a);
  std::vector<Task> tasks_set_activations(const LessonAction& a);
  std::vector<Task> tasks_set_greedy(const LessonAction& a);
  std::vector<Task> tasks_set_prompt(const LessonAction& a);
  std::vector<Task> tasks_set_max_tokens(const LessonAction& a);
  std::vector<Task> tasks_generate(const LessonAction& a);
  std::vector<Task> tasks_decode_steps(const LessonAction& a);
  std::vector<Task> tasks_forget_cached_prefixes(const LessonAction& a);
  std::vector<Task> tasks_batch_sweep(const LessonAction& a);
  std::vector<Task> tasks_staggered_load(const LessonAction& a);
  std::vector<Task> tasks_size_sweep(const LessonAction& a);
  std::vector<Task> tasks_quant_compare(const LessonAction& a);
  std::vector<Task> tasks_select_variant(const LessonAction& a);
  std::vector<Task> tasks_keep(const LessonAction& a);
  std::vector<Task> tasks_open_panel(const LessonAction& a);
  std::vector<Task> tasks_highlight(const LessonAction& a);
  void next();
  void complete();
  void fail(const QString& reason);
  void end_run();  // not busy any more: ended()
  void end_waiting();
  // Completes when when() holds after one of the window's signals (or the poll timer).
  template <typename Signal>
  void wait_for(Signal signal, std::function<bool()> when);
  void wait_polling(std::function<bool()> when);
  void fail_on_window_failure();

  Task load_model(const QString& which);
  Task set_backend(const QString& which);
  Task set_kv_type(const QString& which);
  Task set_keep_kv(bool keep);
  // Either part left unset keeps what the window has.
  Task set_batching(std::optional<bool> static_batches, std::optional<int> wait_ms);
  Task set_activations(bool quantised);
  Task generate(std::optional<int> max_tokens);
  Task decode_steps(int steps);
  Task batch_sweep();
  Task staggered_load(const StaggeredLoad& load);
  std::vector<Task> size_sweep(const QStringList& sizes);
  Task quant_compare(const QStringList& types);
  Task highlight(const QString& panel, const QString& element);
  void keep(const std::string& name);
  const TimingModel* timing_model(const QString& label) const;

  MainWindow& window_;
  std::vector<TimingModel> timing_models_;
  std::vector<SizeSweepPoint> size_sweep_;
  std::string variant_;  // the comparison row select_variant chose (kept across runs)
  std::optional<FoldCounts> run_start_counts_;
  std::map<std::string, std::map<std::string, double>> kept_;
  std::deque<Task> tasks_;
  int total_ = 0;
  int done_ = 0;
  bool busy_ = false;
  bool started_generation_ = false;
  bool started_sweep_ = false;  // cancel() stops only a sweep this run started
  std::vector<QMetaObject::Connection> waits_;
  std::function<bool()> poll_condition_;
  QTimer* poll_timer_;
};

}  // namespace servescope::gui
