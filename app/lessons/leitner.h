// Flashcards on the Leitner system: five boxes reviewed 0, 1, 3, 7 and 14 days after the last
// review. Knowing a card moves it up a box (it stays in box 5); not knowing it sends it back
// to box 1, due again today. Dates are passed in, so a test can be any day.
#pragma once

#include <QDate>
#include <array>
#include <map>
#include <string>
#include <vector>

namespace servescope::lessons {

inline constexpr int kLeitnerBoxes = 5;
inline constexpr std::array<int, kLeitnerBoxes> kLeitnerIntervalDays = {0, 1, 3, 7, 14};

struct CardState {
  int box = 1;  // 1..5
  QDate due;    // invalid: never reviewed, due now

  bool operator==(const CardState&) const = default;
};

// The days a card in `box` waits after a review (box clamped to 1..5).
int interval_days(int box);

// The state after reviewing on `today`.
CardState review(const CardState& state, bool knew, const QDate& today);

bool is_due(const CardState& state, const QDate& today);

// Card states by card id; a card without one is new: box 1, due.
using CardStates = std::map<std::string, CardState>;

struct DueCounts {
  std::array<int, kLeitnerBoxes> cards{};  // cards in each box
  std::array<int, kLeitnerBoxes> due{};    // of those, due today
  int due_total = 0;
};

// Over the deck `card_ids` (cards in `states` that are not in the deck are ignored).
DueCounts due_counts(const std::vector<std::string>& card_ids, const CardStates& states,
                     const QDate& today);

// The due cards of the deck in review order: lowest box first, then deck order.
std::vector<std::string> due_cards(const std::vector<std::string>& card_ids,
                                   const CardStates& states, const QDate& today);

}  // namespace servescope::lessons
