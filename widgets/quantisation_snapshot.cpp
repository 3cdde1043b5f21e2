#include "widgets/quantisation_snapshot.h"

#include <algorithm>

namespace servescope::widgets {

const QuantVariantRow* baseline_of(const std::vector<QuantVariantRow>& variants) {
  for (const QuantVariantRow& row : variants) {
    if (row.baseline) return &row;
  }
  return variants.empty() ? nullptr : &variants.front();
}

double decode_speedup(const QuantVariantRow& variant, const QuantVariantRow& baseline) {
  return baseline.decode_tokens_per_s > 0.0
             ? variant.decode_tokens_per_s / baseline.decode_tokens_per_s
             : 0.0;
}

int64_t first_divergent_token(const TokenContinuation& a, const TokenContinuation& b) {
  const bool by_id = a.ids.size() == a.pieces.size() && b.ids.size() == b.pieces.size() &&
                     !(a.ids.empty() && b.ids.empty());
  const size_t length_a = by_id ? a.ids.size() : a.pieces.size();
  const size_t length_b = by_id ? b.ids.size() : b.pieces.size();
  const size_t common = std::min(length_a, length_b);
  for (size_t i = 0; i < common; ++i) {
    const bool same = by_id ? a.ids[i] == b.ids[i] : a.pieces[i] == b.pieces[i];
    if (!same) return static_cast<int64_t>(i);
  }
  return length_a == length_b ? -1 : static_cast<int64_t>(common);
}

}  // namespace servescope::widgets
