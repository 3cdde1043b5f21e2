// The merge loop both BPE flavours share: start from the UTF-8 characters of a text and
// repeatedly merge the adjacent pair of symbols with the highest priority (ties: the leftmost
// pair) until no adjacent pair can merge. A priority queue of candidate pairs keeps this
// O(n log n); candidates made stale by an earlier merge are skipped when popped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <queue>
#include <string_view>
#include <vector>

#include "engine/tokenizer/utf8.h"

namespace servescope {

// `pair_priority(left, right)` returns the priority of merging two adjacent symbols (views
// into `text`, right directly after left), or nullopt if they do not merge. `text` must be
// valid UTF-8. Returns the final symbols, in order, as views into `text`.
template <class PairPriority>
std::vector<std::string_view> merge_greedily(std::string_view text, PairPriority pair_priority) {
  struct Symbol {
    size_t begin;
    size_t length;  // 0 once merged into its left neighbour
    int64_t prev;   // -1: none
    int64_t next;   // -1: none
  };
  struct Candidate {
    double priority;
    int64_t left;
    int64_t right;
    size_t length;  // left + right when queued; differs once either side has changed
  };
  struct LowerPriority {
    bool operator()(const Candidate& a, const Candidate& b) const {
      if (a.priority != b.priority) return a.priority < b.priority;
      return a.left > b.left;  // equal priority: the leftmost pair comes first
    }
  };

  std::vector<Symbol> symbols;
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = utf8::next(text, pos).length;
    const auto index = static_cast<int64_t>(symbols.size());
    symbols.push_back({pos, length, index - 1, -1});
    if (index > 0) symbols[index - 1].next = index;
    pos += length;
  }

  const auto view = [&](const Symbol& s) { return text.substr(s.begin, s.length); };
  std::priority_queue<Candidate, std::vector<Candidate>, LowerPriority> queue;
  const auto consider = [&](int64_t left, int64_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[left];
    const Symbol& r = symbols[right];
    if (std::optional<double> priority = pair_priority(view(l), view(r))) {
      queue.push({*priority, left, right, l.length + r.length});
    }
  };

  for (size_t i = 1; i < symbols.size(); ++i) consider(static_cast<int64_t>(i) - 1, static_cast<int64_t>(i));

  while (!queue.empty()) {
    const Candidate candidate = queue.top();
    queue.pop();
    Symbol& left = symbols[candidate.left];
    Symbol& right = symbols[candidate.right];
    const bool stale = left.length == 0 || right.length == 0 || left.next != candidate.right ||
                       left.length + right.length != candidate.length;
    if (stale) continue;
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = candidate.left;
    consider(left.prev, candidate.left);
    consider(candidate.left, left.next);
  }

  std::vector<std::string_view> result;
  for (int64_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) result.push_back(view(symbols[i]));
  return result;
}

}  // namespace servescope
