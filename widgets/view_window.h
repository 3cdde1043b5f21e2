// Zoom and pan along a chart's x axis: each zoomable chart paints a "view window" of its full
// x range, which the user narrows (wheel), moves (drag) and resets. The window is kept in data
// units, so a chart zoomed on a few steps stays on them while new steps arrive; unzoomed it
// follows the full range as that grows.
#pragma once

#include <QPointF>
#include <QRectF>
#include <QString>
#include <utility>
#include <vector>

#include "widgets/chart_painting.h"

namespace servescope::widgets {

class ViewWindows {
 public:
  // While painting: the x range chart `id` shows of `full`: the user's window moved inside it,
  // never narrower than `min_span`; `full` itself when not zoomed.
  chart::Range window(const QString& id, chart::Range full, double min_span);
  // While painting: a plot of chart `id` (a chart may have several sharing its x axis, such as
  // the slots and the occupancy below them), where the wheel and a drag act.
  void add_plot(const QString& id, const QRectF& plot);
  void clear_plots();  // at the start of a paint

  // The chart with a plot under `pos`, or empty.
  QString chart_at(QPointF pos) const;
  // Narrows (factor < 1) or widens the window of the chart under `pos`, keeping the x value
  // under the mouse where it is; false where no chart is under it.
  bool zoom_at(QPointF pos, double factor);
  // Moves the window of chart `id` by `dx` pixels of its plot, the data following the mouse;
  // false when it did not move (not zoomed, or at an end).
  bool pan(const QString& id, qreal dx);

  bool zoomed(const QString& id) const;
  bool any_zoomed() const;
  void reset();  // every chart back to its full range
  // The range chart `id` showed and the plot it drew in, in the last paint.
  chart::Range shown(const QString& id) const;
  QRectF plot(const QString& id) const;

 private:
  struct State {
    chart::Range full;
    chart::Range window;
    double min_span = 0.0;
    bool zoomed = false;
    std::vector<QRectF> plots;
  };
  State* find(const QString& id);
  const State* find(const QString& id) const;
  // `window` moved inside the full range and widened to the least span; unzoomed when it
  // covers the full range.
  static void settle(State& state, chart::Range window);

  std::vector<std::pair<QString, State>> charts_;
};

}  // namespace servescope::widgets
