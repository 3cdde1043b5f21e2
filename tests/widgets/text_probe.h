// What a widget's paint put on screen as text, for layout and contrast tests: every text item
// with the rectangle it covers (device pixels, after the painter's transform), its colour and
// the clip it was painted under. Read through a recording paint device, so the panels need no
// test hooks: whatever path a text takes (drawText, a label, a legend), it is seen.
#pragma once

#include <QColor>
#include <QImage>
#include <QPolygonF>
#include <QRectF>
#include <QString>
#include <optional>
#include <string>
#include <vector>

class QWidget;

namespace servescope::widgets::testing {

struct PaintedText {
  QString text;
  QRectF box;                   // ink extent: advance width x (ascent + descent), device pixels
  QPolygonF quad;               // the same extent as painted: turned with the text if rotated
  QColor color;                 // the pen it was drawn with
  std::optional<QRectF> clip;   // the clip's bounding rectangle: the painter's and the widget's
  bool scrolls = false;         // inside a scroll area's viewport (clipped to it)
};

// Every text item `widget` and its visible children paint, in `widget`'s coordinates.
std::vector<PaintedText> painted_texts(QWidget& widget);

// Faults a reader would see, one line each: two text boxes that overlap (by more than
// `tolerance` px each way), a text outside `bounds` or cut by its clip, an elided text ("…").
// A text wholly outside its clip (a line scrolled out of view) is not on screen and not judged;
// one a scroll area's viewport cuts (a line half scrolled into view) is judged by what shows.
std::vector<std::string> layout_faults(const std::vector<PaintedText>& texts, const QRectF& bounds,
                                       double tolerance = 1.0);

// WCAG 2 contrast ratio of two opaque colours (1 .. 21).
double contrast_ratio(const QColor& a, const QColor& b);

// The contrast each text has as rendered in `image` (the same widget grabbed at scale 1):
// the strongest contrast between the box's most common colour (its background) and any pixel
// in the box (the text's core strokes), so a wash dimming the text counts.
struct RenderedContrast {
  PaintedText text;
  QColor background;
  QColor ink;
  double ratio = 0.0;
};
std::vector<RenderedContrast> rendered_contrast(const QImage& image,
                                                const std::vector<PaintedText>& texts);

}  // namespace servescope::widgets::testing
