// The batch-size sweep's small charts (throughput, step time) against batch size on a log2
// axis, so 1, 2, 4, 8, 16 are evenly spaced (on a linear axis 1, 2 and 4 crowded into its first
// tenth), with a tick at each power of two.
#pragma once

#include <QColor>
#include <QPointF>
#include <QRectF>
#include <QString>
#include <cstdint>
#include <utility>
#include <vector>

#include "widgets/batching_panel.h"
#include "widgets/chart_painting.h"

class QPainter;

namespace servescope::widgets {

struct Theme;

struct BatchAxis {
  chart::Range range;  // in log2 of the batch size, the end points a little inside
  std::vector<std::pair<double, QString>> ticks;  // at each power of two, labelled "1", "2", ...
  static double x(int64_t max_batch);
};
BatchAxis batch_axis(const std::vector<SweepPoint>& sweep);

// A small line chart of y against batch size, with dots; `spread` adds a bar from each size's
// fastest to its slowest run (for the step time, whose runs the sweep keeps). Returns where
// each point's dot was drawn, in the sweep's order.
std::vector<QPointF> paint_sweep_chart(QPainter& painter, const QRectF& area,
                                       const std::vector<SweepPoint>& sweep,
                                       double SweepPoint::*field, const QString& heading,
                                       const QString& y_label, const QColor& color,
                                       const Theme& t, bool spread = false);

}  // namespace servescope::widgets
