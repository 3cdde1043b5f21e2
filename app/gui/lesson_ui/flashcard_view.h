// Flashcard review on the Leitner boxes, keyboard only: Space shows the back, 1 = didn't know
// (back to box 1), 2 = knew it (up a box), A = this lesson's cards or every lesson's. The due
// counts per box stay on screen. The deck is the open lesson's cards (students reviewing a
// lesson found 43 cards of every lesson, the first five from lesson 0), or every lesson's; the
// states come from, and go back to, the learner's progress.
#pragma once

#include <QDate>
#include <QWidget>
#include <vector>

#include "app/lessons/leitner.h"
#include "app/lessons/lesson.h"

class QCheckBox;
class QLabel;

namespace servescope::gui {

class FlashcardView : public QWidget {
  Q_OBJECT

 public:
  explicit FlashcardView(QWidget* parent = nullptr);

  void set_deck(const std::vector<const lessons::Lesson*>& lessons);
  // The lesson whose cards are reviewed unless every lesson's are.
  void set_lesson(const std::string& lesson_id);
  void set_all_lessons(bool all);
  bool all_lessons() const;
  void set_states(const lessons::CardStates& states);
  const lessons::CardStates& states() const { return states_; }
  void set_today(const QDate& today);  // tests review on any day

  lessons::DueCounts due() const;
  QString current_card() const;  // its id; empty when nothing is due
  bool back_shown() const { return back_shown_; }
  QString front_text() const;
  QString back_text() const;

  void show_back();
  void answer(bool knew);

 Q_SIGNALS:
  void reviewed(const QString& card, bool knew);

 protected:
  void keyPressEvent(QKeyEvent* event) override;

 private:
  struct Card {
    std::string id;
    std::string lesson;
    QString front;
    QString back;
  };
  void next_card();
  void update_view();
  // ids_ and the session's queue for the cards in review: the lesson's, or every lesson's.
  void refresh_scope();

  std::vector<Card> deck_;
  std::vector<std::string> ids_;  // the cards in review
  std::string lesson_;
  lessons::CardStates states_;
  QDate today_ = QDate::currentDate();
  std::vector<std::string> queue_;  // the due cards of this session, in review order
  bool back_shown_ = false;

  QCheckBox* all_lessons_;
  QLabel* counts_;
  QLabel* front_;
  QLabel* back_;
  QLabel* keys_;
};

}  // namespace servescope::gui
