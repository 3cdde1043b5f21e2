#include "app/lessons/leitner.h"

#include <algorithm>

namespace servescope::lessons {
namespace {

int clamp_box(int box) { return std::clamp(box, 1, kLeitnerBoxes); }

CardState state_of(const std::string& id, const CardStates& states) {
  const auto it = states.find(id);
  return it == states.end() ? CardState{} : it->second;
}

}  // namespace

int interval_days(int box) { return kLeitnerIntervalDays[static_cast<size_t>(clamp_box(box) - 1)]; }

CardState review(const CardState& state, bool knew, const QDate& today) {
  CardState next;
  next.box = knew ? clamp_box(state.box + 1) : 1;
  next.due = today.addDays(interval_days(next.box));
  return next;
}

bool is_due(const CardState& state, const QDate& today) {
  return !state.due.isValid() || state.due <= today;
}

DueCounts due_counts(const std::vector<std::string>& card_ids, const CardStates& states,
                     const QDate& today) {
  DueCounts counts;
  for (const std::string& id : card_ids) {
    const CardState state = state_of(id, states);
    const auto box = static_cast<size_t>(clamp_box(state.box) - 1);
    ++counts.cards[box];
    if (is_due(state, today)) {
      ++counts.due[box];
      ++counts.due_total;
    }
  }
  return counts;
}

std::vector<std::string> due_cards(const std::vector<std::string>& card_ids,
                                   const CardStates& states, const QDate& today) {
  std::vector<std::string> due;
  for (const std::string& id : card_ids) {
    if (is_due(state_of(id, states), today)) due.push_back(id);
  }
  std::stable_sort(due.begin(), due.end(), [&](const std::string& a, const std::string& b) {
    return clamp_box(state_of(a, states).box) < clamp_box(state_of(b, states).box);
  });
  return due;
}

}  // namespace servescope::lessons
