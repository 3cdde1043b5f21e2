// The lessons in the window: the Learn dock (LearnPane), lecture mode, and the action
// dispatcher that runs the lessons' experiments. It loads the lesson files from the data
// folder, keeps the loaded model's facts for {{model.*}} and the generated questions, and
// adds its actions to the window's menus.
#pragma once

#include <QObject>
#include <QString>
#include <memory>
#include <optional>

#include "app/gui/lesson_ui/lesson_settings.h"
#include "app/lessons/model_facts.h"
#include "app/lessons/progress_store.h"

class QDockWidget;

namespace servescope::gui {

class ActionDispatcher;
class LearnPane;
class LectureMode;
class MainWindow;

class LessonUi : public QObject {
  Q_OBJECT

 public:
  // lessons_folder: where the lesson files are (the data folder's lessons/ when empty).
  // progress_folder: where progress.json is kept; empty: progress lives in memory only.
  LessonUi(MainWindow& window, const QString& lessons_folder, const QString& progress_folder);
  ~LessonUi() override;

  ActionDispatcher& dispatcher() { return *dispatcher_; }
  LearnPane& learn() { return *learn_; }
  LectureMode& lecture() { return *lecture_; }
  QDockWidget& dock() { return *dock_; }
  const lessons::ModelFacts* model_facts() const { return facts_ ? &*facts_ : nullptr; }
  const lessons::Progress& progress() const { return progress_; }
  // What the lesson's runs changed in the window, given back when the learner leaves it.
  LessonSettings& lesson_settings() { return settings_; }
  // File menu's Export / Import progress (for handing in); false with a notice on failure.
  bool export_progress(const QString& path);
  bool import_progress(const QString& path);
  // File menu's Export lab report: FILE.html and FILE.pdf; false with a notice on failure.
  bool export_lab_report(const QString& html_path);

 protected:
  // The window or the Learn pane closing: the learner leaves the lesson.
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void update_lecture_strip();
  void restore_progress();
  void apply_progress();  // position and flashcards from progress_
  void save_progress();
  // The step's experiment completed: its result is kept and saved at once.
  void keep_step_result();
  // The open step as the learner left it: their prediction and, when its experiment
  // completed, its result.
  void restore_step();
  // The learner leaves the open lesson: the settings its runs changed are given back.
  void leave_lesson();

  MainWindow& window_;
  ActionDispatcher* dispatcher_;
  LearnPane* learn_;
  LectureMode* lecture_;
  QDockWidget* dock_;
  std::optional<lessons::ModelFacts> facts_;
  std::unique_ptr<lessons::ProgressStore> store_;  // null: progress is not kept on disk
  lessons::Progress progress_;
  bool dock_was_visible_ = true;
  LessonSettings settings_;
};

}  // namespace servescope::gui
