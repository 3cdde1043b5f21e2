// Long work the window waits for, that a first run on a slow machine makes longer (writing a
// timing model, loading a model: its roofs measured the first time, kernels warmed up;
// quantising the weights; a batch sweep): what each task is, how far it has got and for how
// long it has run. The status bar says the same in its own words; lecture mode, which hides
// the status bar, shows line() instead, so a hall sees something move.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <map>

namespace servescope::gui {

// "Loading stories15M.gguf": the load task's name for the model file at `path`.
QString loading_what(const QString& path);

class WorkProgress : public QObject {
  Q_OBJECT

 public:
  enum class Task { kTimingModel, kLoad, kWeights, kBatchSweep, kStaggeredLoad };

  using QObject::QObject;

  // A task starts (or starts again, its clock from zero): `what` names it, "Writing the 100M
  // F32 timing model". The fraction done is unknown until advance() says it.
  void start(Task task, const QString& what);
  // How far a running task has got, 0..1; ignored when the task is not running.
  void advance(Task task, double fraction);
  // What a running task does now ("measuring the device's roofs"); ignored when not running.
  void set_stage(Task task, const QString& stage);
  void finish(Task task);

  bool running(Task task) const { return running_.contains(task); }
  bool busy() const { return !running_.empty(); }
  // The task that started last and runs still, as lecture mode shows it: "Writing the 100M
  // F32 timing model: 43 % (2.1 s)", or "Loading stories15M.gguf: warming up the kernels
  // (3.4 s)" with a stage and no fraction known; empty when nothing runs.
  QString line() const;
  // That task's fraction done, or < 0 when unknown or nothing runs.
  double fraction() const;

 Q_SIGNALS:
  void changed();

 private:
  struct Running {
    QString what;
    QString stage;
    double fraction = -1.0;
    QElapsedTimer clock;
    quint64 order = 0;  // start order: the latest one is shown
  };
  const Running* latest() const;

  std::map<Task, Running> running_;
  quint64 starts_ = 0;
};

}  // namespace servescope::gui
