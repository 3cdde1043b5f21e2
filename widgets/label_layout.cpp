#include "widgets/label_layout.h"

#include <algorithm>
#include <cmath>

namespace servescope::widgets {

bool segment_meets(const QLineF& segment, const QRectF& box) {
  if (box.contains(segment.p1()) || box.contains(segment.p2())) return true;
  const QLineF edges[] = {{box.topLeft(), box.topRight()},
                          {box.topRight(), box.bottomRight()},
                          {box.bottomRight(), box.bottomLeft()},
                          {box.bottomLeft(), box.topLeft()}};
  return std::any_of(std::begin(edges), std::end(edges), [&segment](const QLineF& edge) {
    return segment.intersects(edge, nullptr) == QLineF::BoundedIntersection;
  });
}

int LabelPlacer::conflicts(const QRectF& box) const {
  int boxes = 0;
  for (const Obstacle& other : boxes_) boxes += box.intersects(other.box) ? other.weight : 0;
  const auto lines = std::count_if(segments_.begin(), segments_.end(),
                                   [&box](const QLineF& line) { return segment_meets(line, box); });
  const auto labels = std::count_if(labels_.begin(), labels_.end(),
                                    [&box](const QRectF& other) { return box.intersects(other); });
  constexpr int kLabelWeight = 1000;
  return boxes + static_cast<int>(lines + kLabelWeight * labels);
}

bool LabelPlacer::is_free(const QRectF& box) const {
  return bounds_.contains(box) && conflicts(box) == 0;
}

std::optional<QRectF> LabelPlacer::place(const std::vector<QRectF>& candidates) {
  std::optional<QRectF> best;
  int best_conflicts = 0;
  for (const QRectF& box : candidates) {
    if (!bounds_.contains(box)) continue;
    const int count = conflicts(box);
    if (!best || count < best_conflicts) {
      best = box;
      best_conflicts = count;
    }
    if (count == 0) break;
  }
  if (best) labels_.push_back(*best);
  return best;
}

std::optional<QRectF> LabelPlacer::place_free(const std::vector<QRectF>& candidates) {
  for (const QRectF& box : candidates) {
    if (is_free(box)) {
      labels_.push_back(box);
      return box;
    }
  }
  return std::nullopt;
}

std::vector<int> flow_into_columns(const std::vector<FlowRow>& rows, double column_height) {
  std::vector<int> columns(rows.size(), 0);
  int column = 0;
  double used = 0.0;
  for (size_t i = 0; i < rows.size(); ++i) {
    // A heading goes with the row after it: both must fit, or both move on.
    const double needed =
        rows[i].height + (rows[i].keep_with_next && i + 1 < rows.size() ? rows[i + 1].height : 0);
    if (used > 0.0 && used + needed > column_height) {
      ++column;
      used = 0.0;
    }
    columns[i] = column;
    used += rows[i].height;
  }
  return columns;
}

double distance_to_segment(const QPointF& point, const QLineF& segment) {
  const QPointF d = segment.p2() - segment.p1();
  const double length2 = QPointF::dotProduct(d, d);
  const double t =
      length2 > 0 ? std::clamp(QPointF::dotProduct(point - segment.p1(), d) / length2, 0.0, 1.0)
                  : 0.0;
  const QPointF nearest = segment.p1() + t * d;
  return std::hypot(point.x() - nearest.x(), point.y() - nearest.y());
}

std::vector<RowLabel> row_labels(int64_t count, int64_t stride, double top, double row,
                                 double label_height) {
  const double bottom = top + row * static_cast<double>(count);
  // Every `step`-th row; false when a label had to be left out for crowding.
  const auto every = [&](int64_t step, std::vector<RowLabel>& labels) {
    double free_from = top;  // below the last label placed
    bool whole = true;
    for (int64_t r = 0; r < count; r += step) {
      const double centre =
          std::clamp(top + (static_cast<double>(r) + 0.5) * row, top + label_height / 2,
                     std::max(top + label_height / 2, bottom - label_height / 2));
      if (centre - label_height / 2 < free_from - 0.5) {
        whole = false;
        continue;
      }
      free_from = centre + label_height / 2;
      labels.push_back({r, centre});
    }
    return whole;
  };
  // A wider stride where one leaves a label out: evenly spaced labels (0, 3, 6, ...), not
  // 0, 4, 6 where the clamped first crowded out the second.
  for (int64_t step = std::max<int64_t>(stride, 1);; ++step) {
    std::vector<RowLabel> labels;
    if (every(step, labels) || step >= count) return labels;
  }
}

}  // namespace servescope::widgets
