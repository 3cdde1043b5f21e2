#include "app/gui/flashcard_view.h"

#include <QKeyEvent>
#include <QLabel>
#include <QVBoxLayout>

namespace servescope::gui {

FlashcardView::FlashcardView(QWidget* parent) : QWidget(parent) {
  setFocusPolicy(Qt::StrongFocus);
  setToolTip("Keyboard only: Space shows the back, 1 = didn't know, 2 = knew it");
  auto* column = new QVBoxLayout(this);
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
  ids_.clear();
  for (const lessons::Lesson* l : lessons) {
    for (const lessons::Flashcard& c : l->flashcards) {
      deck_.push_back({c.id, QString::fromStdString(c.front), QString::fromStdString(c.back)});
      ids_.push_back(c.id);
    }
  }
  queue_ = lessons::due_cards(ids_, states_, today_);
  back_shown_ = false;
  update_view();
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
    boxes << QString("box %1: %2 due of %3")
                 .arg(b + 1)
                 .arg(counts.due[static_cast<size_t>(b)])
                 .arg(counts.cards[static_cast<size_t>(b)]);
  }
  counts_->setText(QString("<b>%1 cards due today</b> (%2 in this session). %3")
                       .arg(counts.due_total)
                       .arg(queue_.size())
                       .arg(boxes.join(", ")));
  if (queue_.empty()) {
    front_->setText(ids_.empty() ? "No flashcards in the lessons." : "Nothing due. Well done.");
    back_->clear();
    keys_->clear();
    return;
  }
  const auto card = std::find_if(deck_.begin(), deck_.end(),
                                 [&](const Card& c) { return c.id == queue_.front(); });
  front_->setText(card->front);
  back_->setText(back_shown_ ? card->back : QString());
  const int box = states_.count(card->id) ? states_.at(card->id).box : 1;
  keys_->setText(back_shown_ ? QString("Box %1.   1: didn't know    2: knew it").arg(box)
                             : QString("Box %1.   Space: show the back").arg(box));
}

}  // namespace servescope::gui
