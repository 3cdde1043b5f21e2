// The window settings a lesson's experiments (its steps' and its practice questions' "Run it")
// change (the model and its backend, the KV cache's type and whether there is one, classmates,
// max tokens, samples of the prompt, greedy decoding, static or continuous batching and the
// batch wait, the prompt),
// given back when the learner leaves the lesson: each one a run of the lesson changed goes back to what it was before the
// lesson changed it, unless the learner has set it by hand since.
#pragma once

#include <QCoreApplication>
#include <QString>
#include <QStringList>
#include <QVariant>
#include <map>
#include <optional>

namespace servescope::gui {

class MainWindow;

class LessonSettings {
  Q_DECLARE_TR_FUNCTIONS(LessonSettings)

 public:
  explicit LessonSettings(MainWindow& window) : window_(window) {}

  // Around each run of one of the lesson's steps (a run that failed or was cancelled too):
  // what changed in between, the lesson changed.
  void run_started();
  void run_ended();
  // The learner leaves the lesson: the settings go back as above, and are forgotten either way.
  // Returns what was given back ("batch wait 0 ms", "greedy off", ...); empty when nothing.
  QStringList give_back();
  // Whether a run of the lesson changed a setting that leaving would give back.
  bool has_changes() const { return !changed_.empty(); }

 private:
  struct Change {
    QVariant before;  // before the lesson first changed it
    QVariant set;     // as the lesson's last run that changed it left it
  };

  MainWindow& window_;
  std::optional<std::map<QString, QVariant>> at_run_start_;
  std::map<QString, Change> changed_;  // by setting name
};

}  // namespace servescope::gui
