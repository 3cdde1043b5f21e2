#include "app/gui/lesson_ui/lesson_ui.h"

#include <QAction>
#include <QDateTime>
#include <QDockWidget>
#include <QEvent>
#include <QFileDialog>
#include <QMenu>
#include <QStatusBar>
#include <algorithm>

#include "app/common/data_files.h"
#include "app/gui/lesson_ui/action_dispatcher.h"
#include "app/gui/lesson_ui/learn_pane.h"
#include "app/gui/lesson_ui/lab_report_file.h"
#include "app/gui/lesson_ui/lecture_mode.h"
#include "app/gui/window/main_window.h"
#include "app/gui/window/shortcut_tip.h"
#include "app/lessons/vocabulary.h"

namespace servescope::gui {
namespace {

lessons::StepResultRecord result_record(const std::string& lesson, const StepOutcome& outcome) {
  lessons::StepResultRecord record{lesson, outcome.step_id, outcome.measures, {},
                                   QDateTime::currentDateTimeUtc()};
  for (const lessons::ConditionResult& c : outcome.conditions) {
    record.conditions.push_back({c.condition, c.passed});
  }
  return record;
}

StepOutcome outcome_of(const lessons::StepResultRecord& record) {
  StepOutcome outcome{record.step, record.measures, {}};
  for (const lessons::ConditionRecord& c : record.conditions) {
    outcome.conditions.push_back({c.condition, std::nullopt, c.passed, {}});
  }
  return outcome;
}

}  // namespace

LessonUi::LessonUi(MainWindow& window, const QString& lessons_folder,
                   const QString& progress_folder)
    : QObject(&window), window_(window), settings_(window) {
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
  dock_ = new QDockWidget(tr("Learn"), &window);
  dock_->setObjectName("learn-dock");
  dock_->setWidget(learn_);
  window.addDockWidget(Qt::RightDockWidgetArea, dock_);
  lecture_ = new LectureMode(window);

  QMenu* view = window.view_menu();
  view->addSeparator();
  QAction* learn = dock_->toggleViewAction();
  learn->setText(tr("&Learn pane"));
  learn->setShortcut(QKeySequence("Ctrl+L"));
  set_tip_with_shortcut(learn, tr("Lessons, practice questions and flashcards"));
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
    learn_->refill();  // what was shown before the model was ready has "?" for its figures
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
  connect(lecture_, &LectureMode::lesson_requested, learn_,
          [this](int delta) { learn_->open_adjacent_lesson(delta); });
  connect(lecture_, &LectureMode::back_requested, this, [this] {
    if (learn_->step_view().part() == StepView::Part::kRunning) {
      learn_->step_view().cancel();
    } else {
      learn_->back();
    }
  });
  connect(lecture_, &LectureMode::choice_requested, this, [this](int delta) {
    StepView& step = learn_->step_view();
    if (learn_->at_introduction()) {
      lecture_->say(tr("Space shows the lesson's first step, and its question"));
    } else if (const std::optional<QString> unit = step.number_unit()) {
      lecture_->ask_number(step.prediction().value_or(0.0), *unit);
    } else if (!step.step_choice(delta)) {
      lecture_->say(tr("Nothing to predict here: a step's prediction is made before its run"));
    }
  });
  // Typed in the strip, the class's number goes into the Learn pane's box, as typed there.
  connect(lecture_, &LectureMode::number_entered, this,
          [this](double value) { learn_->step_view().set_prediction(value); });
  connect(lecture_, &LectureMode::rerun_requested, this, [this] {
    StepView& step = learn_->step_view();
    if (learn_->at_introduction()) {
      lecture_->say(tr("Space shows the lesson's first step"));
    } else if (step.part() == StepView::Part::kRunning) {
      lecture_->say(tr("The experiment is running: Page Up cancels it"));
    } else {
      step.run();  // as the pane's "Run it again": the prediction is recorded with the run
    }
  });
  connect(learn_, &LearnPane::step_shown, this, &LessonUi::update_lecture_strip);

  QMenu* file = window.file_menu();
  QAction* quit = file->actions().isEmpty() ? nullptr : file->actions().back();
  QAction* export_action = new QAction(tr("&Export progress..."), this);
  export_action->setToolTip(
      tr("Saves your answers, predictions and flashcard boxes as a JSON file "
         "(to hand in)"));
  connect(export_action, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getSaveFileName(
        &window_, tr("Export progress"), "servescope-progress.json", tr("JSON (*.json)"));
    if (!path.isEmpty()) export_progress(path);
  });
  QAction* import_action = new QAction(tr("&Import progress..."), this);
  import_action->setToolTip(tr("Replaces your progress with an exported JSON file"));
  connect(import_action, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getOpenFileName(&window_, tr("Import progress"), QString(),
                                                      tr("JSON (*.json)"));
    if (!path.isEmpty()) import_progress(path);
  });
  QAction* report_action = new QAction(tr("Export &lab report..."), this);
  report_action->setToolTip(
      tr("Writes your lessons' predictions, measurements, explanations, practice answers and "
         "flashcard boxes as an HTML file and a PDF beside it (to hand in)"));
  connect(report_action, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getSaveFileName(
        &window_, tr("Export lab report"), "servescope-lab-report.html", tr("HTML (*.html)"));
    if (!path.isEmpty()) export_lab_report(path);
  });
  file->insertAction(quit, export_action);
  file->insertAction(quit, import_action);
  file->insertAction(quit, report_action);
  file->insertSeparator(quit);

  if (!progress_folder.isEmpty())
    store_ = std::make_unique<lessons::ProgressStore>(progress_folder);
  restore_progress();
  connect(learn_, &LearnPane::position_changed, this,
          [this](const QString& lesson, const QString& step) {
            // An earlier step's outline pointed at the wrong chart for this step's text.
            dispatcher_->clear_highlights();
            progress_.lesson = lesson.toStdString();
            progress_.step = step.toStdString();
            restore_step();
            save_progress();
          });
  connect(&learn_->step_view(), &StepView::run_finished, this, [this] {
    keep_step_result();
    const lessons::Lesson* lesson = learn_->current_lesson();
    if (lesson && learn_->current_step() + 1 == static_cast<int>(lesson->steps.size())) {
      // Giving the settings back now would rebuild the engine under the results being read
      // (a KV type given back emptied the pool the last step's text points at).
      window_.statusBar()->showMessage(
          settings_.has_changes()
              ? tr("Lesson finished. Its settings go back when you leave the lesson.")
              : tr("Lesson finished."),
          15000);
    }
  });
  // Every experiment, a step's or a practice question's "Run it", goes through the dispatcher.
  connect(dispatcher_, &ActionDispatcher::started, this, [this] {
    settings_.run_started();
    // The lessons' figures are of one continuation per prompt; the learner's Samples setting
    // goes back when they leave the lesson.
    window_.set_samples(1);
  });
  connect(dispatcher_, &ActionDispatcher::ended, this, [this] { settings_.run_ended(); });
  connect(learn_, &LearnPane::leaving_lesson, this, &LessonUi::leave_lesson);
  window.installEventFilter(this);
  dock_->installEventFilter(this);
  connect(&learn_->step_view(), &StepView::predicted, this, [this](const QString& step, double v) {
    if (!learn_->current_lesson()) return;
    progress_.predictions.push_back({learn_->current_lesson()->id, step.toStdString(),
                                     QString::number(v, 'g', 15).toStdString(),
                                     QDateTime::currentDateTimeUtc()});
    save_progress();
  });
  connect(&learn_->practice(), &PracticeView::answered, this,
          [this](const QString& lesson, const QString& question, const QString& given,
                 const lessons::AnswerResult& result) {
            progress_.answers.push_back({lesson.toStdString(), question.toStdString(),
                                         given.toStdString(), result.correct, result.score,
                                         QDateTime::currentDateTimeUtc()});
            learn_->practice().mark_answered(lesson.toStdString() + "/" + question.toStdString(),
                                             result.correct);
            save_progress();
          });
  connect(&learn_->flashcards(), &FlashcardView::reviewed, this, [this] {
    progress_.cards = learn_->flashcards().states();
    save_progress();
  });
}

void LessonUi::restore_progress() {
  if (store_) {
    lessons::ProgressStore::Loaded loaded = store_->load();
    progress_ = std::move(loaded.progress);
    learn_->show_notice(loaded.notice);
  }
  apply_progress();
}

void LessonUi::apply_progress() {
  learn_->flashcards().set_states(progress_.cards);
  // A step the learner predicted in counts as reached; the practice list marks answers.
  std::map<std::string, bool> answered;
  std::map<std::string, QString> given;  // the last answer to each question
  for (const lessons::AnswerRecord& a : progress_.answers) {
    answered[a.lesson + "/" + a.question] = a.correct;
    given[a.lesson + "/" + a.question] = QString::fromStdString(a.given);
  }
  learn_->practice().set_answered(answered);
  learn_->practice().set_given(std::move(given));
  // A step predicted in, or whose experiment completed, counts as reached.
  const auto visited = [&](const std::string& lesson, const std::string& step) {
    return progress_.result(lesson, step) ||
           std::any_of(progress_.predictions.begin(), progress_.predictions.end(),
                       [&](const lessons::PredictionRecord& p) {
                         return p.lesson == lesson && p.step == step;
                       });
  };
  for (const lessons::Lesson* l : learn_->lessons()) {
    for (size_t i = 0; i < l->steps.size(); ++i) {
      if (visited(l->id, l->steps[i].id)) {
        learn_->set_reached(QString::fromStdString(l->id), static_cast<int>(i) + 1);
      }
    }
  }
  const lessons::Lesson* lesson = nullptr;
  for (const lessons::Lesson* l : learn_->lessons()) {
    if (l->id == progress_.lesson) lesson = l;
  }
  if (!lesson) return;
  int step = 0;
  for (size_t i = 0; i < lesson->steps.size(); ++i) {
    if (lesson->steps[i].id == progress_.step) step = static_cast<int>(i);
  }
  learn_->open_lesson(QString::fromStdString(lesson->id), step);
  restore_step();  // before the position is followed (a restart): the step as it was left
}

void LessonUi::keep_step_result() {
  const lessons::Lesson* lesson = learn_->current_lesson();
  const std::optional<StepOutcome>& outcome = learn_->step_view().outcome();
  if (!lesson || !outcome) return;
  progress_.keep_result(result_record(lesson->id, *outcome));
  save_progress();
}

void LessonUi::restore_step() {
  const lessons::Lesson* lesson = learn_->current_lesson();
  if (!lesson) return;
  const std::string& step = lesson->steps[static_cast<size_t>(learn_->current_step())].id;
  // The learner's last prediction for this step, back in its place.
  for (auto it = progress_.predictions.rbegin(); it != progress_.predictions.rend(); ++it) {
    if (it->lesson == lesson->id && it->step == step) {
      learn_->step_view().set_prediction(QString::fromStdString(it->value).toDouble());
      break;
    }
  }
  // The lesson's kept results: each step's measures for the steps.<id>.* of later steps, and
  // this step's result on screen when its experiment completed before.
  for (const lessons::StepResultRecord& r : progress_.results) {
    if (r.lesson != lesson->id) continue;
    learn_->step_view().remember(r.step, r.measures);
    if (r.step == step) learn_->step_view().show_result(outcome_of(r));
  }
}

void LessonUi::leave_lesson() {
  // A run still going ends first, so what it changed is given back too.
  if (learn_->step_view().part() == StepView::Part::kRunning) learn_->step_view().cancel();
  if (dispatcher_->busy()) dispatcher_->cancel();  // a practice question's "Run it"
  dispatcher_->clear_highlights();
  const QStringList given = settings_.give_back();
  if (given.isEmpty()) return;
  window_.statusBar()->showMessage(tr("Lesson settings given back: %1").arg(given.join(", ")),
                                   10000);
}

bool LessonUi::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() == QEvent::Close && (watched == &window_ || watched == dock_)) {
    leave_lesson();  // before the window saves its settings on closing
  }
  return QObject::eventFilter(watched, event);
}

void LessonUi::save_progress() {
  if (!store_) return;
  try {
    store_->save(progress_);
  } catch (const std::exception& error) {
    learn_->show_notice(tr("Your progress could not be saved: %1").arg(error.what()));
  }
}

bool LessonUi::export_progress(const QString& path) {
  try {
    lessons::ProgressStore::export_to(progress_, path);
    return true;
  } catch (const std::exception& error) {
    learn_->show_notice(tr("Export failed: %1").arg(error.what()));
    return false;
  }
}

bool LessonUi::export_lab_report(const QString& html_path) {
  try {
    write_lab_report(lessons::build_lab_report(progress_, learn_->lessons(), model_facts(),
                                               lab_report_facts(model_facts())),
                     html_path);
    learn_->show_notice(
        tr("Lab report written: %1 and %2").arg(html_path, lab_report_pdf_path(html_path)));
    return true;
  } catch (const LabReportError& error) {
    learn_->show_notice(tr("The lab report could not be written: %1").arg(error.what()));
    return false;
  }
}

bool LessonUi::import_progress(const QString& path) {
  try {
    progress_ = lessons::ProgressStore::import_from(path);
  } catch (const std::exception& error) {
    learn_->show_notice(tr("Import failed (your progress is unchanged): %1").arg(error.what()));
    return false;
  }
  save_progress();
  learn_->show_notice({});
  apply_progress();
  return true;
}

LessonUi::~LessonUi() = default;

void LessonUi::update_lecture_strip() {
  lecture_->set_step(learn_->step_title(), learn_->step_markdown(),
                     learn_->prediction_markdown(),
                     learn_->at_introduction() ||
                         learn_->step_view().part() == StepView::Part::kPredict);
}

}  // namespace servescope::gui
