#include "app/gui/lesson_ui/flashcard_view.h"

#include <QCheckBox>
#include <QKeyEvent>
#include <QLabel>
#include <QVBoxLayout>

namespace servescope::gui {

FlashcardView::FlashcardView(QWidget* parent) : QWidget(parent) {
  setFocusPolicy(Qt::StrongFocus);
  setToolTip(
      tr("Keyboard only: Space shows the back, 1 = didn't know, 2 = knew it, A = this "
         "lesson's cards or every lesson's"));
  auto* column = new QVBoxLayout(this);
  all_lessons_ = new QCheckBox(tr("Every lesson's cards (A)"));
  all_lessons_->setObjectName("flashcards-all-lessons");
  all_lessons_->setToolTip(tr("Off: only the open lesson's cards are reviewed"));
  all_lessons_->setFocusPolicy(Qt::NoFocus);  // the keys stay with the review
  connect(all_lessons_, &QCheckBox::toggled, this, [this] { refresh_scope(); });
  counts_ = new QLabel;
  counts_->setObjectName("flashcard-counts");
  counts_->setWordWrap(true);
  front_ = new QLabel;
  front_->setObjectName("flashcard-front");
  front_->setWordWrap(true);
  front_->setTextFormat(Qt::MarkdownText);
  front_->setAlignment(Qt::AlignCenter);
  QFont big = front_->font();
  big.setPointSizeF(big.pointSizeF() * 1.4);
  big.setBold(true);
  front_->setFont(big);
  back_ = new QLabel;
  back_->setObjectName("flashcard-back");
  back_->setWordWrap(true);
  back_->setTextFormat(Qt::MarkdownText);
  back_->setAlignment(Qt::AlignCenter);
  keys_ = new QLabel;
  keys_->setAlignment(Qt::AlignCenter);
  column->addWidget(all_lessons_);
  column->addWidget(counts_);
  column->addStretch(1);
  column->addWidget(front_);
  column->addSpacing(16);
  column->addWidget(back_);
  column->addStretch(1);
  column->addWidget(keys_);
  update_view();
}

void FlashcardView::set_deck(const std::vector<const lessons::Lesson*>& lessons) {
  deck_.clear();
  for (const lessons::Lesson* l : lessons) {
    for (const lessons::Flashcard& c : l->flashcards) {
      deck_.push_back(
          {c.id, l->id, QString::fromStdString(c.front), QString::fromStdString(c.back)});
    }
  }
  refresh_scope();
}

void FlashcardView::set_lesson(const std::string& lesson_id) {
  lesson_ = lesson_id;
  refresh_scope();
}

void FlashcardView::set_all_lessons(bool all) { all_lessons_->setChecked(all); }

bool FlashcardView::all_lessons() const { return all_lessons_->isChecked(); }

void FlashcardView::refresh_scope() {
  ids_.clear();
  for (const Card& c : deck_) {
    if (all_lessons() || c.lesson == lesson_) ids_.push_back(c.id);
  }
  set_states(states_);
}

void FlashcardView::set_states(const lessons::CardStates& states) {
  states_ = states;
  queue_ = lessons::due_cards(ids_, states_, today_);
  back_shown_ = false;
  update_view();
}

void FlashcardView::set_today(const QDate& today) {
  today_ = today;
  set_states(states_);
}

lessons::DueCounts FlashcardView::due() const { return lessons::due_counts(ids_, states_, today_); }

QString FlashcardView::current_card() const {
  return queue_.empty() ? QString() : QString::fromStdString(queue_.front());
}

QString FlashcardView::front_text() const { return front_->text(); }
QString FlashcardView::back_text() const { return back_shown_ ? back_->text() : QString(); }

void FlashcardView::show_back() {
  if (queue_.empty()) return;
  back_shown_ = true;
  update_view();
}

void FlashcardView::answer(bool knew) {
  if (queue_.empty() || !back_shown_) return;  // the back first: a guess is not a review
  const std::string id = queue_.front();
  states_[id] = lessons::review(states_[id], knew, today_);
  queue_.erase(queue_.begin());
  // Not known: it comes back at the end of this session (box 1 is due today).
  if (!knew) queue_.push_back(id);
  back_shown_ = false;
  update_view();
  Q_EMIT reviewed(QString::fromStdString(id), knew);
}

void FlashcardView::keyPressEvent(QKeyEvent* event) {
  switch (event->key()) {
    case Qt::Key_Space:
      show_back();
      break;
    case Qt::Key_1:
      answer(false);
      break;
    case Qt::Key_2:
      answer(true);
      break;
    case Qt::Key_A:
      set_all_lessons(!all_lessons());
      break;
    default:
      QWidget::keyPressEvent(event);
      return;
  }
  event->accept();
}

void FlashcardView::update_view() {
  const lessons::DueCounts counts = due();
  QStringList boxes;
  for (int b = 0; b < lessons::kLeitnerBoxes; ++b) {
    boxes << tr("box %1: %2 due of %3")
                 .arg(b + 1)
                 .arg(counts.due[static_cast<size_t>(b)])
                 .arg(counts.cards[static_cast<size_t>(b)]);
  }
  counts_->setText(tr("<b>%1 cards due today</b>, %2 (%3 in this session). %4")
                       .arg(counts.due_total)
                       .arg(all_lessons() ? tr("every lesson's") : tr("this lesson's"))
                       .arg(queue_.size())
                       .arg(boxes.join(", ")));
  if (queue_.empty()) {
    front_->setText(ids_.empty() ? (all_lessons() ? tr("No flashcards in the lessons.")
                                                  : tr("This lesson has no flashcards."))
                                 : tr("Nothing due. Well done."));
    back_->clear();
    keys_->clear();
    return;
  }
  const auto card = std::find_if(deck_.begin(), deck_.end(),
                                 [&](const Card& c) { return c.id == queue_.front(); });
  front_->setText(card->front);
  back_->setText(back_shown_ ? card->back : QString());
  const int box = states_.count(card->id) ? states_.at(card->id).box : 1;
  keys_->setText(back_shown_ ? tr("Box %1.   1: didn't know    2: knew it").arg(box)
                             : tr("Box %1.   Space: show the back").arg(box));
}

}  // namespace servescope::gui
