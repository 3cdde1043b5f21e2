// Flashcard review on the Leitner boxes, keyboard only: Space shows the back, 1 = didn't know
// (back to box 1), 2 = knew it (up a box). The due counts per box stay on screen. The deck is
// every lesson's cards; the states come from, and go back to, the learner's progress.
#pragma once

#include <QDate>
#include <QWidget>
#include <vector>

#include "app/lessons/leitner.h"
#include "app/lessons/lesson.h"

class QLabel;

namespace servescope::gui {

class FlashcardView : public QWidget {
  Q_OBJECT

 public:
  explicit FlashcardView(QWidget* parent = nullptr);

  void set_deck(const std::vector<const lessons::Lesson*>& lessons);
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
    QString front;
    QString back;
  };
  void next_card();
  void update_view();

  std::vector<Card> deck_;
  std::vector<std::string> ids_;
  lessons::CardStates states_;
  QDate today_ = QDate::currentDate();
  std::vector<std::string> queue_;  // the due cards of this session, in review order
  bool back_shown_ = false;

  QLabel* counts_;
  QLabel* front_;
  QLabel* back_;
  QLabel* keys_;
};

}  // namespace servescope::gui
