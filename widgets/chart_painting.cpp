#include "widgets/chart_painting.h"

#include <QFontMetricsF>
#include <QPainter>
#include <algorithm>
#include <cmath>
#include <functional>

#include "widgets/theme.h"

namespace servescope::widgets::chart {
namespace {

double nice_step(double span, int target, bool integer_steps) {
  const double raw = span / std::max(target, 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude * 10.0;
  for (double m : {1.0, 2.0, 5.0}) {
    if (magnitude * m >= raw) {
      step = magnitude * m;
      break;
    }
  }
  return integer_steps ? std::max(step, 1.0) : step;
}

Range non_empty(double min, double max) {
  if (!std::isfinite(min) || !std::isfinite(max)) return {0.0, 1.0};
  if (max < min) std::swap(min, max);
  if (max - min < 1e-12) {
    const double pad = std::max(std::abs(max) * 0.5, 1.0);
    return {min == 0.0 ? 0.0 : min - pad, max + pad};
  }
  return {min, max};
}

}  // namespace

std::vector<double> nice_ticks(double min, double max, int target, bool integer_steps) {
  const Range r = non_empty(min, max);
  const double step = nice_step(r.span(), target, integer_steps);
  std::vector<double> ticks;
  const double first = std::ceil(r.min / step - 1e-9) * step;
  for (double v = first; v <= r.max + step * 1e-9 && ticks.size() < 64; v += step) {
    ticks.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  }
  return ticks;
}

Range nice_range(double min, double max, int target, bool integer_steps) {
  const Range r = non_empty(min, max);
  const double step = nice_step(r.span(), target, integer_steps);
  return {std::floor(r.min / step + 1e-9) * step, std::ceil(r.max / step - 1e-9) * step};
}

QString format_number(double value, int significant) {
  if (!std::isfinite(value)) return QStringLiteral("n/a");
  const double magnitude = std::abs(value);
  if (magnitude >= 1e6) return QString::number(value, 'g', significant);
  if (magnitude >= std::pow(10.0, significant - 1) || value == std::round(value)) {
    return QString::number(std::llround(value));
  }
  if (magnitude < 1e-3) return QString::number(value, 'g', significant);
  const int decimals =
      std::max(0, significant - 1 - static_cast<int>(std::floor(std::log10(magnitude))));
  return QString::number(value, 'f', decimals);
}

units::ByteUnit byte_unit(double max_bytes) { return units::binary_unit_for(max_bytes); }

QString unit_name(const units::ByteUnit& unit) {
  return QString::fromLatin1(unit.symbol.data(), static_cast<qsizetype>(unit.symbol.size()));
}

QFont heading_font(const QFont& base) {
  QFont font = base;
  font.setBold(true);
  if (base.pointSizeF() > 0) font.setPointSizeF(base.pointSizeF() * 1.1);
  return font;
}

QFont small_font(const QFont& base) {
  QFont font = base;
  if (base.pointSizeF() > 0) font.setPointSizeF(base.pointSizeF() * 0.9);
  return font;
}

double Frame::x(double value) const {
  const double t = x_.span() == 0.0 ? 0.0 : (value - x_.min) / x_.span();
  return plot_.left() + t * plot_.width();
}

double Frame::y(double value) const {
  const double t = y_.span() == 0.0 ? 0.0 : (value - y_.min) / y_.span();
  return plot_.bottom() - t * plot_.height();
}

namespace {

// Tick labels carry as many decimals as the step needs: 0, 0.5, 1 rather than 0.500.
QString format_tick(double value, const std::vector<double>& ticks) {
  const double step = ticks.size() >= 2 ? ticks[1] - ticks[0] : 1.0;
  if (std::abs(value) >= 1e6 || step >= 1.0 || step <= 0.0) return format_number(value);
  const int decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(step) - 1e-9)), 0, 6);
  return QString::number(value, 'f', decimals);
}

}  // namespace

namespace {

// The tick target, lowered until neighbouring labels keep `min_gap` apart along the axis:
// at lecture size (24 px type) the requested 6 ticks smeared into each other.
std::vector<double> spaced_ticks(Range range, int target, bool integer_steps, qreal length,
                                 const std::function<qreal(const QString&)>& extent,
                                 qreal min_gap) {
  std::vector<double> ticks;
  for (int t = std::max(target, 2); t >= 2; --t) {
    ticks = nice_ticks(range.min, range.max, t, integer_steps);
    if (ticks.size() < 2) return ticks;
    qreal widest = 0;
    for (double v : ticks) widest = std::max(widest, extent(format_tick(v, ticks)));
    const qreal spacing = length * (ticks[1] - ticks[0]) / std::max(range.span(), 1e-300);
    if (spacing >= widest + min_gap) return ticks;
  }
  return {ticks.front(), ticks.back()};
}

// Every k-th of the given ticks (the first kept), k the least that keeps neighbouring labels
// `min_gap` apart along the axis.
std::vector<std::pair<double, QString>> thinned_ticks(
    const std::vector<std::pair<double, QString>>& ticks, Range range, qreal length,
    const std::function<qreal(const QString&)>& extent, qreal min_gap) {
  if (ticks.size() < 2) return ticks;
  qreal widest = 0;
  double closest = range.span();
  for (size_t i = 0; i < ticks.size(); ++i) {
    widest = std::max(widest, extent(ticks[i].second));
    if (i > 0) closest = std::min(closest, ticks[i].first - ticks[i - 1].first);
  }
  const double spacing = length * closest / std::max(range.span(), 1e-300);
  const auto every = static_cast<size_t>(
      std::max(1.0, std::ceil((widest + min_gap) / std::max(spacing, 1e-9))));
  std::vector<std::pair<double, QString>> kept;
  for (size_t i = 0; i < ticks.size(); i += every) kept.push_back(ticks[i]);
  return kept;
}

}  // namespace

// An axis title too long for its side is broken at the space nearest its middle (never cut
// short: "achieved GFLOP/s (log sc..." told the class nothing).
QString fit_title(const QString& title, const QFontMetricsF& metrics, qreal length) {
  if (metrics.horizontalAdvance(title) <= length) return title;
  const qsizetype middle = title.size() / 2;
  qsizetype best = -1;
  for (qsizetype i = 0; i < title.size(); ++i) {
    if (title[i] == QLatin1Char(' ') && (best < 0 || std::abs(i - middle) < std::abs(best - middle)))
      best = i;
  }
  if (best < 0) return title;
  return title.left(best) + QLatin1Char('\n') + title.mid(best + 1);
}

Frame draw_axes(QPainter& painter, const QRectF& outer, const AxesSpec& spec, const Theme& theme) {
  painter.save();
  const QFont base = painter.font();
  const QFont tick_font = small_font(base);
  const QFontMetricsF label_metrics(base);
  const QFontMetricsF tick_metrics(tick_font);
  const qreal tick_height = tick_metrics.height();

  // Bottom: tick labels, x title; top: half a tick label, so the top one is not cut.
  const qreal bottom = tick_height + 4 + label_metrics.height() + 2;
  const qreal top = tick_height / 2;
  const qreal plot_height = outer.height() - top - bottom;
  const QString y_title = fit_title(spec.y_label, label_metrics, plot_height + 2 * top);
  const int y_title_lines = spec.y_label.isEmpty() ? 0 : int(y_title.count(QLatin1Char('\n'))) + 1;

  const std::vector<double> y_ticks =
      spec.y_ticks > 0
          ? spaced_ticks(spec.y, spec.y_ticks, spec.integer_y, plot_height,
                         [tick_height](const QString&) { return tick_height; }, tick_height / 2)
          : std::vector<double>{};
  qreal y_tick_width = 0;
  for (double v : y_ticks)
    y_tick_width = std::max(y_tick_width, tick_metrics.horizontalAdvance(format_tick(v, y_ticks)));

  // Left: the rotated y title, tick labels.
  const qreal left = (y_title_lines == 0 ? 0 : y_title_lines * label_metrics.height() + 6) +
                     (y_ticks.empty() ? 1 : y_tick_width + 6);
  const auto tick_width = [&tick_metrics](const QString& text) {
    return tick_metrics.horizontalAdvance(text);
  };
  const qreal em = tick_metrics.horizontalAdvance(QLatin1Char('M'));
  const auto x_labels = [&](qreal length) {
    if (!spec.x_labelled_ticks.empty())
      return thinned_ticks(spec.x_labelled_ticks, spec.x, length, tick_width, em);
    const std::vector<double> ticks =
        spaced_ticks(spec.x, spec.x_ticks, spec.integer_x, length, tick_width, em);
    std::vector<std::pair<double, QString>> labelled;
    for (double v : ticks) labelled.emplace_back(v, format_tick(v, ticks));
    return labelled;
  };
  std::vector<std::pair<double, QString>> x_ticks = x_labels(outer.width() - left);
  const qreal right =
      tick_metrics.horizontalAdvance(x_ticks.empty() ? format_tick(0, {}) : x_ticks.back().second) /
          2 +
      4;
  QRectF plot = outer.adjusted(left, top, -right, -bottom);
  if (plot.width() < 10 || plot.height() < 10) plot = outer;
  x_ticks = x_labels(plot.width());
  const Frame frame(plot, spec.x, spec.y);

  painter.setFont(tick_font);
  for (double v : y_ticks) {
    const qreal py = frame.y(v);
    if (py < plot.top() - 0.5 || py > plot.bottom() + 0.5) continue;
    painter.setPen(QPen(theme.grid, 1));
    painter.drawLine(QPointF(plot.left(), py), QPointF(plot.right(), py));
    painter.setPen(theme.muted_text);
    // The lowest label sits on the axis, not across it, clear of the x axis' first label.
    const qreal label_top = std::min(py - tick_height / 2, plot.bottom() - tick_height + 2);
    painter.drawText(QRectF(plot.left() - y_tick_width - 6, label_top, y_tick_width + 2,
                            tick_height),
                     Qt::AlignRight | Qt::AlignVCenter, format_tick(v, y_ticks));
  }
  for (const auto& [v, text] : x_ticks) {
    const qreal px = frame.x(v);
    if (px < plot.left() - 0.5 || px > plot.right() + 0.5) continue;
    painter.setPen(QPen(theme.grid, 1));
    painter.drawLine(QPointF(px, plot.top()), QPointF(px, plot.bottom()));
    painter.setPen(theme.muted_text);
    const qreal w = tick_metrics.horizontalAdvance(text);
    painter.drawText(QRectF(px - w / 2 - 2, plot.bottom() + 3, w + 4, tick_height),
                     Qt::AlignCenter, text);
  }
  painter.setPen(QPen(theme.muted_text, 1));
  painter.drawLine(plot.bottomLeft(), plot.bottomRight());
  painter.drawLine(plot.bottomLeft(), plot.topLeft());

  painter.setFont(base);
  painter.setPen(theme.text);
  painter.drawText(QRectF(outer.left(), outer.bottom() - label_metrics.height(), outer.width(),
                          label_metrics.height()),
                   Qt::AlignHCenter | Qt::AlignBottom,
                   label_metrics.elidedText(spec.x_label, Qt::ElideRight, outer.width()));
  painter.translate(outer.left(), plot.center().y());
  painter.rotate(-90);
  painter.drawText(QRectF(-plot.height() / 2 - 40, 0, plot.height() + 80,
                          y_title_lines * label_metrics.height()),
                   Qt::AlignHCenter | Qt::AlignTop, y_title);
  painter.restore();
  return frame;
}

qreal draw_heading(QPainter& painter, const QRectF& area, const QString& text, const Theme& theme) {
  painter.save();
  painter.setFont(heading_font(painter.font()));
  painter.setPen(theme.text);
  // Wrapped to the area's width: a heading cut mid-word ("Throughput per phase, all steps al")
  // lost its meaning at the window's opening size.
  const QRectF box = painter.boundingRect(QRectF(area.left(), area.top(), area.width(), 0),
                                          Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, text);
  painter.drawText(QRectF(area.left(), area.top(), area.width(), box.height()),
                   Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, text);
  painter.restore();
  return box.height() + 4;
}

void fill_patterned(QPainter& painter, const QRectF& rect, const QColor& color,
                    Qt::BrushStyle pattern, const QColor& pattern_color) {
  painter.fillRect(rect, color);
  if (pattern != Qt::SolidPattern && pattern != Qt::NoBrush) {
    painter.fillRect(rect, QBrush(pattern_color, pattern));
  }
}

namespace {

qreal legend_line(const QFontMetricsF& metrics) { return metrics.height() + 4; }
qreal legend_swatch(const QFontMetricsF& metrics) { return metrics.height() * 0.8; }
// A line swatch is wider, so that a dash pattern shows.
qreal swatch_width(const LegendEntry& entry, qreal swatch) {
  return entry.line != Qt::NoPen ? 2 * swatch : swatch;
}

void draw_swatch(QPainter& painter, const QRectF& box, const LegendEntry& entry,
                 const Theme& theme) {
  if (entry.line != Qt::NoPen) {
    painter.setPen(QPen(entry.color, 2.5, entry.line, Qt::FlatCap));
    painter.drawLine(QPointF(box.left(), box.center().y()), QPointF(box.right(), box.center().y()));
  } else if (entry.outlined) {
    painter.setPen(QPen(entry.color, 2.5));
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(box.adjusted(1, 1, -1, -1));
  } else {
    fill_patterned(painter, box, entry.color, entry.pattern, theme.text);
    if (entry.lower.isValid()) {
      painter.fillRect(
          QRectF(box.left(), box.bottom() - box.height() / 3, box.width(), box.height() / 3),
          entry.lower);
    }
    painter.setPen(QPen(theme.muted_text, 0.8));
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(box);
  }
}

}  // namespace

std::vector<QRectF> legend_boxes(const QFontMetricsF& metrics, const QRectF& area,
                                 const std::vector<LegendEntry>& entries) {
  const qreal line = legend_line(metrics);
  const qreal swatch = legend_swatch(metrics);
  std::vector<QRectF> boxes;
  qreal x = area.left();
  qreal y = area.top();
  for (const LegendEntry& entry : entries) {
    const qreal width =
        swatch_width(entry, swatch) + 5 + metrics.horizontalAdvance(entry.label) + 14;
    if (x > area.left() && x + width > area.right()) {
      x = area.left();
      y += line;
    }
    boxes.emplace_back(x, y, width, line);
    x += width;
  }
  return boxes;
}

qreal draw_legend(QPainter& painter, const QRectF& area, const std::vector<LegendEntry>& entries,
                  const Theme& theme) {
  painter.save();
  const QFontMetricsF metrics(painter.font());
  const qreal line = legend_line(metrics);
  const qreal swatch = legend_swatch(metrics);
  const std::vector<QRectF> boxes = legend_boxes(metrics, area, entries);
  for (size_t i = 0; i < entries.size(); ++i) {
    const LegendEntry& entry = entries[i];
    const QRectF& cell = boxes[i];
    const qreal width = swatch_width(entry, swatch);
    painter.save();
    // A hidden series' entry stays, faint and struck through, so a click brings it back.
    if (entry.hidden) painter.setOpacity(0.35);
    draw_swatch(painter, QRectF(cell.left(), cell.top() + (line - swatch) / 2, width, swatch),
                entry, theme);
    painter.setPen(theme.text);
    if (entry.hidden) {
      QFont struck = painter.font();
      struck.setStrikeOut(true);
      painter.setFont(struck);
    }
    painter.drawText(QRectF(cell.left() + width + 5, cell.top(), cell.width(), line),
                     Qt::AlignLeft | Qt::AlignVCenter, entry.label);
    painter.restore();
  }
  painter.restore();
  return boxes.empty() ? 0.0 : boxes.back().top() - area.top() + line;
}

void draw_text_on_fill(QPainter& painter, const QRectF& box, int flags, const QString& text,
                       const QColor& fill, const Theme& theme) {
  constexpr double kReadable = 7.0;
  const QColor black(Qt::black), white(Qt::white);
  const QColor ink =
      contrast_ratio(black, fill) >= contrast_ratio(white, fill) ? black : white;
  painter.save();
  if (contrast_ratio(ink, fill) >= kReadable) {
    painter.setPen(ink);
  } else {
    const QRectF used = painter.boundingRect(box, flags, text).adjusted(-2, 0, 2, 0);
    painter.fillRect(used, theme.background);
    painter.setPen(theme.text);
  }
  painter.drawText(box, flags, text);
  painter.restore();
}

void draw_note(QPainter& painter, const QRectF& area, const QString& text, const Theme& theme) {
  painter.save();
  painter.setPen(theme.muted_text);
  painter.drawText(area, Qt::AlignCenter | Qt::TextWordWrap, text);
  painter.restore();
}

}  // namespace servescope::widgets::chart
