// The scripted demo: once the engine is ready it sets the classmates, generates the prompt,
// shows the chosen panel, and after the given time writes a screenshot of the window and ends
// the application (exit code 0, or 1 with a one-line reason on stderr). A lesson step's run
// (--run) is waited for first: the time counts from its end. With a replay the recorded run is
// the engine: the demo only shows the panel (or lesson) and takes the picture.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <optional>

#include "app/gui/panels/panel_id.h"

namespace servescope::gui {

class MainWindow;

struct DemoPlan {
  bool replay = false;  // a recorded run plays: nothing is generated, set or measured
  bool remote = false;  // the window attaches to a server: the demo generates there
  QString prompt;
  int classmates = 0;
  std::optional<int> samples;  // Sampling > Samples; unset: as the settings left it
  std::optional<PanelId> panel;
  std::optional<QString> screenshot;
  int after_ms = 4000;
  bool sweep = false;  // measure the batch-size sweep first
  // The Learn pane's view (see GuiOptions): lesson id, 1-based step, run its experiment, tab,
  // a 1-based question and an answer to it, lecture mode.
  std::optional<QString> lesson;
  int step = 1;
  bool run_step = false;
  std::optional<QString> learn_tab;
  std::optional<int> question;
  std::optional<QString> answer;
  bool lecture = false;
  std::optional<QStringList> quant_types;  // the quantisation lab compares these
  std::optional<QString> quant_block;      // its block tab shows this type in the screenshot
  bool here_and_there = false;             // the screenshot is of View > Here and there
};

class DemoRunner : public QObject {
  Q_OBJECT

 public:
  DemoRunner(MainWindow& window, DemoPlan plan);

 private:
  void start();
  void finish();
  void fail(const QString& reason);
  bool show_lesson();
  // Opens step `index` (from 0) of the plan's lesson, past its introduction.
  bool open_step(int index);
  // Runs the step shown; when its run ends, the next up to the plan's, else the screenshot.
  void run_shown_step();

  MainWindow& window_;
  DemoPlan plan_;
  bool started_ = false;
  bool finishing_ = false;  // the screenshot's timer runs
  bool awaiting_run_ = false;  // a step's run was started and has not ended
};

}  // namespace servescope::gui
