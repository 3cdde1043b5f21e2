// The outline a lesson puts around a panel's element: a line just outside the element's edge,
// the element itself untouched (an outline never covers the data it points at) and the rest of
// the panel dimmed, as one translucent layer.
//
// It is rasterised from a distance field, not built from path operations: stroking or uniting
// the outline of a few hundred thin step bars (the Phases panel after a lesson's generations)
// took seconds to minutes per paint in Qt's stroker and path clipper, at every frame while the
// panel updated. Here the cost is the element's bounding box in pixels times the halo's width,
// whatever the number of bars.
#pragma once

#include <QColor>
#include <QImage>
#include <QPainterPath>
#include <QRectF>
#include <QSize>
#include <vector>

namespace servescope::widgets {

struct HaloStyle {
  double width = 8.0;  // logical pixels; the outline is a quarter of it (at least 2) wide
  double gap = 2.0;    // logical pixels between the element's edge and its outline
  QColor edge;         // the outline
  QColor dim;          // everything outside the element (translucent)
};

// A highlightable element as a panel painted it: areas (bars, charts) and paths (lines,
// outlines). Areas are kept apart because they are many (a bar per step) and cheap to cover.
struct ElementShape {
  std::vector<QRectF> areas;
  std::vector<QPainterPath> paths;

  bool empty() const { return areas.empty() && paths.empty(); }
  QRectF bounds() const;      // of every part, lines (no height or width) included
  QPainterPath path() const;  // every part as one path
};

// A layer of `size` logical pixels at `ratio` device pixels per logical pixel, to draw over the
// panel: the element (logical coordinates) outlined and clear, the rest dimmed.
QImage highlight_layer(const ElementShape& element, QSize size, qreal ratio,
                       const HaloStyle& style);

}  // namespace servescope::widgets
