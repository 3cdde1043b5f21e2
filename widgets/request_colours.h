// Whose request each mark is, the same way in every panel: the user's own in one colour and
// named in the legend, the classmates' in two alternating tones named on hover (Theme::request).
#pragma once

#include <QString>
#include <cstdint>
#include <set>
#include <vector>

#include "widgets/chart_painting.h"
#include "widgets/theme.h"

namespace servescope::widgets {

// The user's own requests (their ids, any order), as the panels' snapshots carry them.
class OwnRequests {
 public:
  OwnRequests() = default;
  explicit OwnRequests(std::vector<int64_t> ids) : ids_(ids.begin(), ids.end()) {}

  bool contains(int64_t request) const { return ids_.count(request) > 0; }
  QColor colour(int64_t request, const Theme& t) const {
    return t.request(request, contains(request));
  }
  // "request 12", or "your request 12": how a tooltip or a table names it.
  QString name(int64_t request) const;

  // Legend entries for the requests a chart shows: "your request 12" (several: "your
  // requests 12, 15") in the user's colour, then one two-tone "classmates" entry; `compact`
  // (a projector's room) says just "yours" and "classmates", the numbers left to the hover.
  std::vector<chart::LegendEntry> legend(const std::set<int64_t>& shown, const Theme& t,
                                         bool compact = false) const;

 private:
  std::set<int64_t> ids_;
};

}  // namespace servescope::widgets
