#include "app/lessons/leitner.h"

#include <gtest/gtest.h>

namespace servescope::lessons {
namespace {

const QDate kMonday(2026, 3, 2);

TEST(Leitner, KnowingACardMovesItUpABoxAndWaitsThatBoxsInterval) {
  CardState card;  // new: box 1, due now
  EXPECT_TRUE(is_due(card, kMonday));
  const int expected_waits[] = {1, 3, 7, 14, 14};  // after moving to box 2, 3, 4, 5, 5
  QDate day = kMonday;
  for (int review_number = 0; review_number < 5; ++review_number) {
    card = review(card, true, day);
    EXPECT_EQ(card.box, std::min(review_number + 2, 5));
    EXPECT_EQ(day.daysTo(card.due), expected_waits[review_number]);
    EXPECT_FALSE(is_due(card, card.due.addDays(-1)));
    EXPECT_TRUE(is_due(card, card.due));
    day = card.due;
  }
}

TEST(Leitner, NotKnowingACardSendsItBackToBoxOneDueToday) {
  const CardState in_box_4{4, kMonday};
  const CardState missed = review(in_box_4, false, kMonday);
  EXPECT_EQ(missed.box, 1);
  EXPECT_EQ(missed.due, kMonday);
  EXPECT_TRUE(is_due(missed, kMonday));
  EXPECT_EQ(interval_days(1), 0);
  EXPECT_EQ(interval_days(5), 14);
}

TEST(Leitner, CountsCardsAndDueCardsPerBox) {
  const std::vector<std::string> deck = {"new", "b1", "b2-due", "b2-later", "b5-due", "b5-later"};
  const CardStates states = {{"b1", {1, kMonday}},
                             {"b2-due", {2, kMonday.addDays(-1)}},
                             {"b2-later", {2, kMonday.addDays(1)}},
                             {"b5-due", {5, kMonday}},
                             {"b5-later", {5, kMonday.addDays(14)}},
                             {"not-in-deck", {3, kMonday}}};
  const DueCounts counts = due_counts(deck, states, kMonday);
  EXPECT_EQ(counts.cards, (std::array<int, 5>{2, 2, 0, 0, 2}));
  EXPECT_EQ(counts.due, (std::array<int, 5>{2, 1, 0, 0, 1}));
  EXPECT_EQ(counts.due_total, 4);
  EXPECT_EQ(due_cards(deck, states, kMonday),
            (std::vector<std::string>{"new", "b1", "b2-due", "b5-due"}));
  // Two weeks later everything is due.
  EXPECT_EQ(due_counts(deck, states, kMonday.addDays(14)).due_total, 6);
}

}  // namespace
}  // namespace servescope::lessons
