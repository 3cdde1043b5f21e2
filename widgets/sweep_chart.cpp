#include "widgets/sweep_chart.h"

#include <QFontMetricsF>
#include <QObject>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>
#include <limits>

#include "widgets/theme.h"

namespace servescope::widgets {

double BatchAxis::x(int64_t max_batch) {
  return std::log2(double(std::max<int64_t>(max_batch, 1)));
}

BatchAxis batch_axis(const std::vector<SweepPoint>& sweep) {
  int64_t smallest = std::numeric_limits<int64_t>::max();
  int64_t largest = 1;
  for (const SweepPoint& p : sweep) {
    smallest = std::min(smallest, std::max<int64_t>(p.max_batch, 1));
    largest = std::max(largest, p.max_batch);
  }
  const int low = int(std::floor(BatchAxis::x(std::min(smallest, largest))));
  const int high = std::max(low + 1, int(std::ceil(BatchAxis::x(largest) - 1e-9)));
  BatchAxis axis;
  axis.range = {low - 0.35, high + 0.35};  // the end dots clear of the axes
  for (int k = low; k <= high; ++k) axis.ticks.emplace_back(k, QString::number(int64_t{1} << k));
  return axis;
}

std::vector<QPointF> paint_sweep_chart(QPainter& painter, const QRectF& area,
                                       const std::vector<SweepPoint>& sweep,
                                       double SweepPoint::*field, const QString& heading,
                                       const QString& y_label, const QColor& color,
                                       const Theme& t, bool spread) {
  // A heading that would wrap in a narrow chart is left out: the y title names the chart.
  const bool one_line = QFontMetricsF(chart::heading_font(painter.font())).horizontalAdvance(
                            heading) <= area.width();
  const qreal top = area.top() + (one_line ? chart::draw_heading(painter, area, heading, t) : 0);
  double max_y = 0.0;
  for (const SweepPoint& p : sweep)
    max_y = std::max(max_y, spread ? std::max(p.*field, p.slowest_step_ms) : p.*field);
  const BatchAxis axis = batch_axis(sweep);
  chart::AxesSpec spec;
  spec.x_label = QObject::tr("batch size");  // its ticks double: 1, 2, 4, 8
  spec.y_label = y_label;
  spec.x = axis.range;
  spec.x_labelled_ticks = axis.ticks;
  spec.y = chart::nice_range(0.0, max_y, 4);
  spec.y_ticks = 4;
  const chart::Frame frame = chart::draw_axes(
      painter, QRectF(area.left(), top, area.width(), area.bottom() - top), spec, t);
  std::vector<QPointF> dots;
  for (const SweepPoint& p : sweep)
    dots.push_back(frame.point(BatchAxis::x(p.max_batch), p.*field));
  QPainterPath line;
  for (size_t i = 0; i < dots.size(); ++i) {
    if (i == 0)
      line.moveTo(dots[i]);
    else
      line.lineTo(dots[i]);
  }
  painter.save();
  if (spread) {
    painter.setPen(QPen(color.darker(130), 1.5));
    for (const SweepPoint& p : sweep) {
      if (p.slowest_step_ms <= 0.0) continue;
      const double x = BatchAxis::x(p.max_batch);
      painter.drawLine(frame.point(x, p.fastest_step_ms), frame.point(x, p.slowest_step_ms));
    }
  }
  painter.setPen(QPen(color, 2));
  painter.setBrush(Qt::NoBrush);
  painter.drawPath(line);
  painter.setPen(QPen(color.darker(130), 1));
  painter.setBrush(color);
  for (const QPointF& dot : dots) painter.drawEllipse(dot, 4, 4);
  painter.restore();
  return dots;
}

}  // namespace servescope::widgets
