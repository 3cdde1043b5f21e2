#include "app/gui/window/demo_runner.h"

#include <QApplication>
#include <QDockWidget>
#include <QScreen>
#include <QTimer>
#include <cstdio>

#include "app/gui/deployments/deployments_window.h"
#include "app/gui/lesson_ui/learn_pane.h"
#include "app/gui/lesson_ui/lecture_mode.h"
#include "app/gui/lesson_ui/lesson_ui.h"
#include "app/gui/window/main_window.h"
#include "app/gui/lesson_ui/step_view.h"

namespace servescope::gui {

DemoRunner::DemoRunner(MainWindow& window, DemoPlan plan)
    : QObject(&window), window_(window), plan_(std::move(plan)) {
  connect(&window_, &MainWindow::engine_ready, this, [this] {
    if (!started_ && (!plan_.remote || window_.remote_connected())) start();
  });
  connect(&window_, &MainWindow::remote_connected_to, this, [this] {
    if (!started_ && window_.engine_info()) start();
  });
  connect(&window_, &MainWindow::failed, this, [this](const QString& message) {
    if (!started_) fail(message);  // the demo's model could not be loaded
  });
}

void DemoRunner::start() {
  started_ = true;
  if (!plan_.replay) {
    window_.set_classmates(plan_.classmates);
    if (plan_.samples) window_.set_samples(*plan_.samples);
    // The engine stays busy until the screenshot (a lesson sets its own classmates).
    window_.set_continuous_classmates(!plan_.lesson);
    window_.set_prompt(plan_.prompt);
    if (plan_.sweep) window_.sweep_batch_sizes();  // the engine's thread runs it, then generates
    if (plan_.quant_types) window_.compare_quantisation(*plan_.quant_types);
  }
  if (plan_.panel) window_.show_panel(*plan_.panel);
  if (plan_.lesson) {
    if (!show_lesson()) return;
  } else if (!plan_.replay) {
    window_.generate();
  }
  if (!plan_.screenshot) return;  // without one the demo stays open, as a lecture would use it
  if (plan_.lesson && plan_.run_step) return;  // run_shown_step takes the shot
  QTimer::singleShot(plan_.after_ms, this, &DemoRunner::finish);
}

void DemoRunner::finish() {
  if (!plan_.screenshot) {
    QApplication::exit(0);
    return;
  }
  if (plan_.quant_block && !window_.show_quant_block(*plan_.quant_block)) {
    fail(QStringLiteral("the quantisation lab has no %1 block yet").arg(*plan_.quant_block));
    return;
  }
  if (plan_.here_and_there) window_.show_deployments();
  const QPixmap shot = plan_.here_and_there ? window_.deployments()->grab() : window_.grab();
  if (shot.isNull() || !shot.save(*plan_.screenshot, "PNG")) {
    fail(QString("could not write the screenshot %1").arg(*plan_.screenshot));
    return;
  }
  const FrameStats& frames = window_.frame_stats();
  const FrameStats& work = window_.frame_work();
  std::fprintf(stderr,
               "servescope: wrote %s (%dx%d); frame time p50 %.1f ms, p99 %.1f ms over %zu "
               "frames; GUI work per frame p50 %.2f ms, p99 %.2f ms\n",
               plan_.screenshot->toLocal8Bit().constData(), shot.width(), shot.height(),
               frames.p50(), frames.p99(), frames.count(), work.p50(), work.p99());
  QApplication::exit(0);
}

bool DemoRunner::open_step(int index) {
  LearnPane& learn = window_.lessons().learn();
  if (!learn.open_lesson(*plan_.lesson, index)) return false;
  // --step names a step: lecture mode shows it, not the lesson's introduction before it.
  if (learn.at_introduction()) learn.advance();
  return true;
}

void DemoRunner::run_shown_step() {
  StepView& view = window_.lessons().learn().step_view();
  awaiting_run_ = true;
  view.run();
}

bool DemoRunner::show_lesson() {
  LearnPane& learn = window_.lessons().learn();
  // A step may read what the steps before it left (the KV lesson's third step reads the request
  // its second generated): with --run, steps 1 to N run in order, as in a class.
  const int first = plan_.run_step ? 0 : plan_.step - 1;
  if (plan_.step < 1 || !learn.open_lesson(*plan_.lesson, plan_.step - 1) || !open_step(first)) {
    fail(QString("--lesson %1 --step %2: no such lesson step").arg(*plan_.lesson).arg(plan_.step));
    return false;
  }
  window_.lessons().dock().show();
  if (plan_.lecture) window_.lessons().lecture().set_active(true);
  if (plan_.run_step) {
    connect(&learn.step_view(), &StepView::part_changed, this, [this](StepView::Part part) {
      if (!awaiting_run_ || part == StepView::Part::kRunning || finishing_) return;
      awaiting_run_ = false;
      const int shown = window_.lessons().learn().current_step();
      if (shown < plan_.step - 1) {
        // From the event loop: the step view is still reporting its last run's end.
        QTimer::singleShot(0, this, [this, shown] {
          if (open_step(shown + 1)) run_shown_step();
        });
        return;
      }
      // A step's experiment takes from a second to a minute: the shot shows its result.
      finishing_ = true;
      QTimer::singleShot(plan_.after_ms, this, &DemoRunner::finish);
    });
    run_shown_step();
  }
  const QString tab = plan_.learn_tab.value_or("lesson");
  learn.tabs().setCurrentIndex(tab == "practice" ? 1 : tab == "flashcards" ? 2 : 0);
  if (tab == "flashcards") learn.flashcards().show_back();
  if (plan_.question) {
    learn.tabs().setCurrentIndex(1);
    if (!learn.practice().show_question(*plan_.question - 1)) {
      fail(QString("--question %1: the lesson has no such question").arg(*plan_.question));
      return false;
    }
    if (plan_.answer) {
      learn.practice().type_answer(*plan_.answer);
      bool ok = false;
      const int option = plan_.answer->toInt(&ok);
      if (ok) learn.practice().choose(option - 1);
      learn.practice().check();
    }
  }
  return true;
}

void DemoRunner::fail(const QString& reason) {
  std::fprintf(stderr, "servescope: %s\n", reason.simplified().toLocal8Bit().constData());
  QApplication::exit(1);
}

}  // namespace servescope::gui
