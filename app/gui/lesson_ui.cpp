#include "app/gui/lesson_ui.h"

#include <QAction>
#include <QDockWidget>
#include <QMenu>
#include <QMenuBar>

#include "app/common/data_files.h"
#include "app/gui/action_dispatcher.h"
#include "app/gui/learn_pane.h"
#include "app/gui/lecture_mode.h"
#include "app/gui/main_window.h"
#include "app/lessons/vocabulary.h"

namespace servescope::gui {
namespace {

QMenu* menu_named(MainWindow& window, const QString& title) {
  for (QAction* a : window.menuBar()->actions()) {
    if (a->menu() && a->text() == title) return a->menu();
  }
  return window.menuBar()->addMenu(title);
}

}  // namespace

LessonUi::LessonUi(MainWindow& window, const QString& lessons_folder)
    : QObject(&window), window_(window) {
  dispatcher_ = new ActionDispatcher(window, this);
  StepContext context;
  context.model = [this] { return model_facts(); };
  context.measured = [this] {
    lessons::Measurements measured;
    for (const lessons::MeasureSpec& spec : lessons::measure_specs()) {
      const MeasureValue v = dispatcher_->measure(spec.name);
      if (v.value) measured[std::string(spec.name)] = *v.value;
    }
    return measured;
  };
  learn_ = new LearnPane(*dispatcher_, context);
  dock_ = new QDockWidget("Learn", &window);
  dock_->setObjectName("learn-dock");
  dock_->setWidget(learn_);
  window.addDockWidget(Qt::RightDockWidgetArea, dock_);
  lecture_ = new LectureMode(window);

  QMenu* view = menu_named(window, "&View");
  view->addSeparator();
  QAction* learn = dock_->toggleViewAction();
  learn->setText("Learn pane");
  learn->setShortcut(QKeySequence("Ctrl+L"));
  learn->setToolTip("Lessons, practice questions and flashcards (Ctrl+L)");
  view->addAction(learn);
  view->addAction(lecture_->action());

  const std::filesystem::path folder = lessons_folder.isEmpty()
                                           ? app::bundled_lessons_path()
                                           : std::filesystem::path(lessons_folder.toStdString());
  learn_->set_lessons(lessons::load_lesson_set(folder));

  connect(&window, &MainWindow::engine_ready, this, [this](const EngineInfo& info) {
    try {
      facts_ = lessons::model_facts(std::filesystem::path(info.model_path.toStdString()));
    } catch (const std::exception&) {
      facts_.reset();  // {{model.*}} stay as "?" rather than showing another model's numbers
    }
  });
  connect(lecture_->action(), &QAction::toggled, this, [this](bool on) {
    if (on) {
      dock_was_visible_ = dock_->isVisible();
      dock_->hide();
    } else if (dock_was_visible_) {
      dock_->show();
    }
    update_lecture_strip();
  });
  connect(lecture_, &LectureMode::advance_requested, learn_, &LearnPane::advance);
  connect(lecture_, &LectureMode::back_requested, this, [this] {
    if (learn_->step_view().part() == StepView::Part::kRunning) {
      learn_->step_view().cancel();
    } else {
      learn_->back();
    }
  });
  connect(learn_, &LearnPane::step_shown, this, &LessonUi::update_lecture_strip);
}

LessonUi::~LessonUi() = default;

void LessonUi::update_lecture_strip() {
  lecture_->set_step(learn_->step_title(), learn_->step_markdown());
}

}  // namespace servescope::gui
