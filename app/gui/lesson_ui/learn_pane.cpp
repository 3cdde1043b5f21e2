#include "app/gui/lesson_ui/learn_pane.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QTabWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "app/gui/lesson_ui/action_dispatcher.h"
#include "app/gui/lesson_ui/page_parts.h"
#include "app/gui/window/shortcut_tip.h"
#include "app/lessons/placeholders.h"

namespace servescope::gui {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

LearnPane::LearnPane(ActionDispatcher& dispatcher, StepContext context, QWidget* parent)
    : QWidget(parent), dispatcher_(dispatcher), context_(context) {
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(4, 4, 4, 4);
  list_ = new QListWidget;
  list_->setObjectName("lesson-list");
  list_->setToolTip(tr("The lessons, with the steps you have reached in each"));
  // A long title wraps inside the pane's width instead of scrolling sideways.
  list_->setWordWrap(true);
  list_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  list_->installEventFilter(this);  // its wrapped height follows its width
  problems_ = new QLabel;
  problems_->setWordWrap(true);
  problems_->hide();

  tabs_ = new QTabWidget;
  auto* lesson_tab = new QWidget;
  auto* lesson_column = new QVBoxLayout(lesson_tab);
  lesson_column->setContentsMargins(0, 0, 0, 0);
  intro_ = new QLabel;
  intro_->setObjectName("lesson-intro");
  intro_->setTextFormat(Qt::MarkdownText);
  intro_->setWordWrap(true);
  intro_->setOpenExternalLinks(true);
  intro_->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::LinksAccessibleByMouse);
  step_view_ = new StepView(dispatcher, context);
  auto* page = new QWidget;
  auto* page_column = new QVBoxLayout(page);
  page_column->setContentsMargins(4, 4, 4, 4);
  page_column->addWidget(intro_);
  page_column->addWidget(step_view_);
  page_column->addStretch(1);  // a short step sits at the top
  step_scroll_ = new PageScroll("step-scroll");
  step_scroll_->setWidget(page);
  practice_ = new PracticeView(dispatcher, context);
  flashcards_ = new FlashcardView;
  notice_ = new QLabel;
  notice_->setObjectName("learn-notice");
  notice_->setWordWrap(true);
  notice_->hide();
  auto* nav = new QHBoxLayout;
  back_ = new QPushButton(tr("< Back"));
  back_->setShortcut(QKeySequence("Alt+Left"));
  set_tip_with_shortcut(back_, tr("The previous step"));
  next_ = new QPushButton(tr("Next >"));
  next_->setShortcut(QKeySequence("Alt+Right"));
  set_tip_with_shortcut(next_, tr("The next step"));
  nav->addWidget(back_);
  nav->addStretch(1);
  nav->addWidget(next_);
  lesson_column->addWidget(step_scroll_, 1);
  lesson_column->addLayout(nav);
  tabs_->addTab(lesson_tab, tr("Lesson"));
  tabs_->addTab(practice_, tr("Practice"));
  tabs_->addTab(flashcards_, tr("Flashcards"));
  tabs_->setTabToolTip(
      1, tr("The lesson's practice questions, with the full working after you answer"));
  tabs_->setTabToolTip(2, tr("Spaced repetition: Space shows the back, 1 didn't know, 2 knew it"));
  connect(tabs_, &QTabWidget::currentChanged, this, [this](int tab) {
    if (tab == 2) flashcards_->setFocus();
  });

  column->addWidget(list_);
  column->addWidget(problems_);
  column->addWidget(notice_);
  column->addWidget(tabs_, 1);

  connect(list_, &QListWidget::currentRowChanged, this, [this](int row) {
    if (row < 0 || row >= static_cast<int>(usable_.size())) return;
    if (usable_[static_cast<size_t>(row)] == current_) return;
    open_lesson(qs(usable_[static_cast<size_t>(row)]->id),
                reached_.count(qs(usable_[static_cast<size_t>(row)]->id))
                    ? std::max(reached_[qs(usable_[static_cast<size_t>(row)]->id)] - 1, 0)
                    : 0);
  });
  connect(back_, &QPushButton::clicked, this, &LearnPane::back);
  connect(next_, &QPushButton::clicked, this, &LearnPane::next);
  connect(step_view_, &StepView::part_changed, this, [this](StepView::Part part) {
    if (part != StepView::Part::kPredict) at_introduction_ = false;  // the step is under way
    Q_EMIT step_shown();
  });
  connect(step_view_, &StepView::prediction_changed, this, [this] { Q_EMIT step_shown(); });
}

void LearnPane::set_lessons(lessons::LessonSet set) {
  set_ = std::move(set);
  usable_ = set_.usable();
  current_ = nullptr;
  if (!set_.problems.empty()) {
    problems_->setText(tr("%1 problem(s) in the lesson files; run servescope "
                          "--check-lessons to see them. The lessons without problems are "
                          "offered.")
                           .arg(set_.problems.size()));
  }
  problems_->setVisible(!set_.problems.empty());
  fill_list();
  flashcards_->set_deck(usable_);
  if (!usable_.empty()) open_lesson(qs(usable_.front()->id), 0);
}

void LearnPane::show_notice(const QString& text) {
  notice_->setText(text);
  notice_->setVisible(!text.isEmpty());
}

QString LearnPane::notice() const { return notice_->isVisible() ? notice_->text() : QString(); }

void LearnPane::fill_list() {
  const QSignalBlocker block(list_);
  // The items are updated in place: rebuilding the list under a click that opened a lesson
  // left the row below highlighted while the clicked lesson showed.
  if (list_->count() != static_cast<int>(usable_.size())) {
    list_->clear();
    for (size_t i = 0; i < usable_.size(); ++i) list_->addItem(QString());  // texts below
  }
  for (int row = 0; row < list_->count(); ++row) {
    const lessons::Lesson* l = usable_[static_cast<size_t>(row)];
    const int reached = reached_.count(qs(l->id)) ? reached_[qs(l->id)] : 0;
    QListWidgetItem* item = list_->item(row);
    item->setText(tr("%1. %2  (%3/%4 steps)")
                      .arg(l->number)
                      .arg(qs(l->title))
                      .arg(reached)
                      .arg(l->steps.size()));
    item->setToolTip(qs(l->summary));
    if (l == current_) list_->setCurrentItem(item);
  }
  fit_list_height();
}

void LearnPane::fit_list_height() {
  // As tall as its lessons (wrapped titles included) and no taller: the step below gets the
  // rest of a small screen.
  list_->doItemsLayout();
  int rows_height = 0;
  for (int row = 0; row < list_->count(); ++row) {
    rows_height += std::max(list_->visualItemRect(list_->item(row)).height(), 1);
  }
  const int wanted = std::min(rows_height + 2 * list_->frameWidth() + 2, 180);
  if (list_->maximumHeight() != wanted) list_->setMaximumHeight(wanted);
}

bool LearnPane::eventFilter(QObject* watched, QEvent* event) {
  if (watched == list_ && event->type() == QEvent::Resize) fit_list_height();
  return QWidget::eventFilter(watched, event);
}

void LearnPane::set_reached(const QString& lesson, int steps) {
  reached_[lesson] = std::max(reached_[lesson], steps);
  fill_list();
}

bool LearnPane::open_lesson(const QString& id, int step) {
  for (const lessons::Lesson* l : usable_) {
    if (qs(l->id) != id) continue;
    if (step < 0 || step >= static_cast<int>(l->steps.size())) return false;
    const bool new_lesson = l != current_;
    if (new_lesson && current_) Q_EMIT leaving_lesson();
    current_ = l;
    step_ = step;
    at_introduction_ = step == 0;
    fill_intro();
    if (new_lesson) {
      practice_->show_lesson(*l);
      flashcards_->set_lesson(l->id);
    }
    fill_list();
    show_current_step();
    return true;
  }
  return false;
}

QString LearnPane::intro_markdown() const {
  const lessons::Measurements measured = context_.measured();
  lessons::FillContext fill;
  fill.model = context_.model();
  fill.measured = &measured;
  return qs(lessons::fill_placeholders(current_->intro, fill).text);
}

void LearnPane::fill_intro() {
  intro_->setText(QString("## %1\n\n%2").arg(qs(current_->title), intro_markdown()));
}

void LearnPane::refill() {
  if (!current_) return;
  fill_intro();
  step_view_->refill();
  practice_->refill();
  Q_EMIT step_shown();  // lecture mode's strip shows the filled text too
}

void LearnPane::show_current_step() {
  step_view_->show_step(*current_, step_);
  intro_->setVisible(step_ == 0);  // the lesson's introduction opens it
  step_scroll_->verticalScrollBar()->setValue(0);
  back_->setEnabled(step_ > 0);
  next_->setEnabled(step_ + 1 < static_cast<int>(current_->steps.size()));
  set_reached(qs(current_->id), step_ + 1);
  tabs_->setCurrentIndex(0);
  Q_EMIT position_changed(qs(current_->id), qs(current_->steps[static_cast<size_t>(step_)].id));
  Q_EMIT step_shown();
}

void LearnPane::next() {
  if (!current_ || step_ + 1 >= static_cast<int>(current_->steps.size())) return;
  ++step_;
  at_introduction_ = false;
  show_current_step();
}

void LearnPane::back() {
  if (!current_) return;
  if (step_ == 0) {
    if (!at_introduction_ && step_view_->part() != StepView::Part::kRunning) {
      at_introduction_ = true;
      Q_EMIT step_shown();
    }
    return;
  }
  --step_;
  show_current_step();
}

void LearnPane::advance() {
  if (!current_) return;
  if (at_introduction_) {
    at_introduction_ = false;
    Q_EMIT step_shown();
    return;
  }
  switch (step_view_->part()) {
    case StepView::Part::kPredict:
      step_view_->run();
      break;
    case StepView::Part::kRunning:
      break;  // the experiment finishes first (Page Up leaves it)
    case StepView::Part::kObserve:
      if (step_ + 1 < static_cast<int>(current_->steps.size())) {
        next();
      } else {
        open_adjacent_lesson(+1);  // Space did nothing at a lesson's last step
      }
      break;
  }
}

bool LearnPane::open_adjacent_lesson(int delta) {
  const auto at = std::find(usable_.begin(), usable_.end(), current_);
  if (at == usable_.end()) return false;
  const std::ptrdiff_t index = (at - usable_.begin()) + delta;
  if (index < 0 || index >= static_cast<std::ptrdiff_t>(usable_.size())) return false;
  return open_lesson(qs(usable_[static_cast<size_t>(index)]->id), 0);
}

QString LearnPane::step_title() const {
  if (!current_) return tr("No lesson open");
  if (at_introduction_) {
    return tr("%1 (introduction, %2 steps)").arg(qs(current_->title)).arg(current_->steps.size());
  }
  return QString("%1 (%2/%3)")
      .arg(qs(current_->steps[static_cast<size_t>(step_)].title))
      .arg(step_ + 1)
      .arg(current_->steps.size());
}

QString LearnPane::step_markdown() const {
  if (!current_) return {};
  return at_introduction_ ? intro_markdown() : step_view_->part_markdown();
}

QString LearnPane::prediction_markdown() const {
  return current_ && !at_introduction_ ? step_view_->prediction_markdown() : QString();
}

}  // namespace servescope::gui
