// What the mouse is over, for the tooltip: the one hit-test layer of every painted widget.
// While a widget paints it registers areas (a rectangle and its text) and hit tests (a function
// that names what lies under a point: a cell, a dot, a step); on hover the layer answers the
// tooltip event from the last paint. Later registrations win where they overlap.
#pragma once

#include <QPointF>
#include <QRect>
#include <QRectF>
#include <QString>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

class QHelpEvent;
class QWidget;

namespace servescope::widgets {

struct HoverHit {
  QString text;
  QRectF area;  // what the text describes; the tooltip hides when the mouse leaves it
};

class HoverLayer {
 public:
  using HitTest = std::function<std::optional<HoverHit>(QPointF)>;

  void clear() { tests_.clear(); }
  void add(const QRectF& area, const QString& text);
  void add(HitTest test) { tests_.push_back(std::move(test)); }
  // Points with their texts, found within `reach` pixels (the nearest wins): dots of a chart.
  void add_points(std::vector<std::pair<QPointF, QString>> points, qreal reach);

  std::optional<HoverHit> hit(QPointF pos) const;
  QString text_at(QPointF pos) const;
  // The area the text at `pos` describes; a hit test's without one is a few pixels around it.
  QRect region_at(QPointF pos) const;

  // Answers a QEvent::ToolTip for `widget`: shows the wrapped text tied to its region, or hides
  // the tooltip and ignores the event where nothing is under the mouse.
  void show_tooltip(QWidget* widget, QHelpEvent& help) const;
  // Plain text as rich text, so Qt wraps its long lines (a plain one is a single line, 1,200 px
  // wide for the sweep's) while its own line breaks stay.
  static QString wrapping(const QString& text);

 private:
  std::vector<HitTest> tests_;
};

}  // namespace servescope::widgets
