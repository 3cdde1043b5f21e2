// Placing a chart's texts where they meet nothing else: labels that may go in several places
// (a roof's figure along its line, a ridge's at the foot of its drop line), and a legend that
// flows into as many columns as the room's height needs. Plain geometry, so it is tested alone.
#pragma once

#include <QLineF>
#include <QRectF>
#include <cstdint>
#include <optional>
#include <vector>

namespace servescope::widgets {

// Gives each label in turn the first of its candidate boxes that lies inside the bounds and
// meets no obstacle and no label placed before it.
class LabelPlacer {
 public:
  explicit LabelPlacer(QRectF bounds) : bounds_(bounds) {}

  // `weight`: how much worse a label over it is than over a plain obstacle (a point, a line),
  // for the place of fewest conflicts when none is free.
  void avoid(const QRectF& box, int weight = 1) { boxes_.push_back({box, weight}); }
  void avoid(const QLineF& segment) { segments_.push_back(segment); }
  bool is_free(const QRectF& box) const;
  // The first free candidate, now taken; when none is free, the one inside the bounds that
  // meets the fewest others, weighted: a label placed before counts far more than any
  // obstacle (text over text does not read), so a label is never dropped; or nothing when
  // none is inside.
  std::optional<QRectF> place(const std::vector<QRectF>& candidates);
  // The first free candidate, now taken, or nothing (the caller may try a shorter text).
  std::optional<QRectF> place_free(const std::vector<QRectF>& candidates);

 private:
  int conflicts(const QRectF& box) const;

  QRectF bounds_;
  struct Obstacle {
    QRectF box;
    int weight;
  };
  std::vector<Obstacle> boxes_;
  std::vector<QRectF> labels_;  // placed by place(): never to be overprinted if avoidable
  std::vector<QLineF> segments_;
};

// The distance from a point to the nearest point of a segment.
double distance_to_segment(const QPointF& point, const QLineF& segment);

// Whether a line segment crosses or touches a rectangle.
bool segment_meets(const QLineF& segment, const QRectF& box);

// A legend's row: its height, and whether it must stay in the column of the row after it (a
// heading with its first entry).
struct FlowRow {
  double height = 0.0;
  bool keep_with_next = false;
};
// The column (0, 1, ...) of each row when the rows fill columns of `column_height` top to
// bottom, in order. A row taller than a column gets one to itself.
std::vector<int> flow_into_columns(const std::vector<FlowRow>& rows, double column_height);

// Labels for rows [0, count) of height `row` from `top`, every `stride`-th or, where the clamp
// at the ends would push one onto its neighbour, every n-th for the smallest n > stride where
// none is: where each label, `label_height` tall, is centred. Each stays inside the rows' span
// (it must not reach into what lies below, e.g. a grid's column labels).
struct RowLabel {
  int64_t row;
  double centre;
};
std::vector<RowLabel> row_labels(int64_t count, int64_t stride, double top, double row,
                                 double label_height);

}  // namespace servescope::widgets
