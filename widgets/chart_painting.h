// Small painting helpers shared by the panels: tick placement, axes with labelled units, legends,
// headings and number formatting. Plain QPainter, so SVG export keeps everything as vectors.
#pragma once

#include <QColor>
#include <QFont>
#include <QFontMetricsF>
#include <QPointF>
#include <QRectF>
#include <QString>
#include <type_traits>
#include <utility>
#include <vector>

#include "units/units.h"

class QPainter;

namespace servescope::widgets {

struct Theme;

namespace chart {

struct Range {
  double min = 0.0;
  double max = 1.0;
  double span() const { return max - min; }
};

// About `target` tick values at 1, 2 or 5 x 10^k steps covering [min, max]; integer_steps keeps
// the step at 1 or more (counts such as tokens or batch sizes).
std::vector<double> nice_ticks(double min, double max, int target, bool integer_steps = false);
// [min, max] widened to the outermost ticks, and never empty.
Range nice_range(double min, double max, int target, bool integer_steps = false);

// "1234", "12.3", "0.0123", "1.2e+06": short, with `significant` digits where a fraction shows.
QString format_number(double value, int significant = 3);
// units::format_bytes as a QString: "512 B", "12 KiB", "3.25 MiB", "1.5 GiB". The one wrapper:
// every byte size the window and its panels show goes through it, whatever type counts it.
template <typename Bytes>
requires std::is_arithmetic_v<Bytes> QString format_bytes(Bytes bytes) {
  return QString::fromStdString(units::format_bytes(static_cast<double>(bytes)));
}
// The binary unit an axis of values up to `max_bytes` is labelled in: units::binary_unit_for.
units::ByteUnit byte_unit(double max_bytes);
QString unit_name(const units::ByteUnit& unit);  // "KiB"

QFont heading_font(const QFont& base);
QFont small_font(const QFont& base);

// Maps data coordinates into a plot rectangle (y grows upwards).
class Frame {
 public:
  Frame() = default;
  Frame(QRectF plot, Range x, Range y) : plot_(plot), x_(x), y_(y) {}
  double x(double value) const;
  double y(double value) const;
  QPointF point(double x_value, double y_value) const { return {x(x_value), y(y_value)}; }
  const QRectF& plot() const { return plot_; }
  const Range& x_range() const { return x_; }
  const Range& y_range() const { return y_; }

 private:
  QRectF plot_;
  Range x_, y_;
};

// `title` as it fits `length`: whole, or broken at the space nearest its middle (two lines).
QString fit_title(const QString& title, const QFontMetricsF& metrics, qreal length);

struct AxesSpec {
  QString x_label;  // with its unit, e.g. "context length (tokens)"
  QString y_label;  // e.g. "time per decode step (ms)"
  Range x, y;       // already nice_range()d by the caller when ticks should sit on the ends
  int x_ticks = 6;
  int y_ticks = 5;
  bool integer_x = false;
  bool integer_y = false;
  // When set, the x ticks at these values with these labels instead of nice ones (a log axis
  // labelled with the values it stands for).
  std::vector<std::pair<double, QString>> x_labelled_ticks;
};

// Draws grid, ticks, tick labels and both axis labels inside `outer` and returns the frame the
// data is drawn in.
Frame draw_axes(QPainter& painter, const QRectF& outer, const AxesSpec& spec, const Theme& theme);

// Bold heading at the top of `area`, wrapped to its width; returns the height it took.
qreal draw_heading(QPainter& painter, const QRectF& area, const QString& text, const Theme& theme);

struct LegendEntry {
  QString label;
  QColor color;
  Qt::BrushStyle pattern = Qt::SolidPattern;  // drawn over the colour in the text colour
  bool outlined = false;                      // swatch drawn as a thick outline only
  QColor lower = QColor();  // when valid, the swatch's lower third in this colour (two-part marks)
  Qt::PenStyle line = Qt::NoPen;  // when set, the swatch is a line in this style (a chart's line)
  QString series = QString();  // the series it names, when the legend toggles them (the label if empty)
  bool hidden = false;  // its series is hidden: drawn dimmed and struck through
};

// Where each entry of draw_legend goes in `area` (swatch and label), in order.
std::vector<QRectF> legend_boxes(const QFontMetricsF& metrics, const QRectF& area,
                                 const std::vector<LegendEntry>& entries);
// Swatch + label pairs laid out left to right, wrapping inside `area`; returns the height used.
qreal draw_legend(QPainter& painter, const QRectF& area, const std::vector<LegendEntry>& entries,
                  const Theme& theme);

// A rectangle filled with `color` and, when `pattern` is not solid, that pattern on top.
void fill_patterned(QPainter& painter, const QRectF& rect, const QColor& color,
                    Qt::BrushStyle pattern, const QColor& pattern_color);


// `text` in `box` over a fill of `fill`: in black or white where one has 7:1 contrast on it,
// else in the text colour on a badge of the background just large enough for it.
void draw_text_on_fill(QPainter& painter, const QRectF& box, int flags, const QString& text,
                       const QColor& fill, const Theme& theme);

// Message centred in `area` in the muted text colour (for "not measured" and similar states).
void draw_note(QPainter& painter, const QRectF& area, const QString& text, const Theme& theme);

}  // namespace chart
}  // namespace servescope::widgets
