#include "widgets/quantisation_charts.h"

#include <QHelpEvent>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>

#include "widgets/chart_painting.h"
#include "widgets/theme.h"
#include "widgets/token_text.h"

namespace servescope::widgets {
namespace {

// A y axis with grid, ticks and its label, and a bottom line; the caller labels the x slots.
// Returns the plot rectangle inside `outer`, leaving `bottom_room` under it for those labels.
chart::Frame draw_bar_axes(QPainter& painter, const QRectF& outer, chart::Range y,
                           const QString& y_label, const QString& x_label, double bottom_room) {
  const Theme& t = theme();
  painter.save();
  const QFontMetricsF fm(painter.font());
  const QFont tick_font = chart::small_font(painter.font());
  const QFontMetricsF tick_metrics(tick_font);
  const std::vector<double> ticks = chart::nice_ticks(y.min, y.max, 5);
  double tick_width = 0.0;
  for (const double v : ticks) {
    tick_width = std::max(tick_width, tick_metrics.horizontalAdvance(chart::format_number(v)));
  }
  // The y title along the plot's height, in two lines when one is longer (never cut short).
  const double top = tick_metrics.height() / 2;
  const double bottom = bottom_room + fm.height() + 4;
  const QString y_title = chart::fit_title(y_label, fm, outer.height() - top - bottom);
  const auto title_lines = static_cast<double>(y_title.count(QLatin1Char('\n')) + 1);
  const double left = title_lines * fm.height() + 6 + tick_width + 6;
  QRectF plot = outer.adjusted(left, top, -4, -bottom);
  if (plot.width() < 10 || plot.height() < 10) plot = outer;
  const chart::Frame frame(plot, {0.0, 1.0}, y);
  painter.setFont(tick_font);
  for (const double v : ticks) {
    const double py = frame.y(v);
    painter.setPen(QPen(t.grid, 1));
    painter.drawLine(QPointF(plot.left(), py), QPointF(plot.right(), py));
    painter.setPen(t.muted_text);
    painter.drawText(QRectF(plot.left() - tick_width - 6, py - tick_metrics.height() / 2,
                            tick_width + 2, tick_metrics.height()),
                     Qt::AlignRight | Qt::AlignVCenter, chart::format_number(v));
  }
  painter.setPen(QPen(t.muted_text, 1));
  painter.drawLine(plot.bottomLeft(), plot.bottomRight());
  painter.drawLine(plot.bottomLeft(), plot.topLeft());
  painter.setFont(painter.font());
  painter.restore();
  painter.save();
  painter.setPen(t.text);
  painter.drawText(QRectF(plot.left(), outer.bottom() - fm.height(), plot.width(), fm.height()),
                   Qt::AlignHCenter | Qt::AlignBottom,
                   fm.elidedText(x_label, Qt::ElideRight, plot.width()));
  painter.translate(outer.left(), plot.center().y());
  painter.rotate(-90);
  painter.drawText(QRectF(-plot.height() / 2, 0, plot.height(), title_lines * fm.height()),
                   Qt::AlignHCenter | Qt::AlignTop, y_title);
  painter.restore();
  return frame;
}

QString format_db(double db) {
  if (std::isnan(db)) return QStringLiteral("n/a");
  if (std::isinf(db)) return QStringLiteral("exact");
  return QStringLiteral("%1 dB").arg(db, 0, 'f', 1);
}

// "blk.12" -> "12"; anything else as it is.
QString short_layer(const QString& layer) {
  return layer.startsWith(QLatin1String("blk.")) ? layer.mid(4) : layer;
}

}  // namespace

QString format_error_edge(double edge) {
  if (edge == 0.0) return QStringLiteral("0");
  if (std::abs(edge) >= 0.01) return QString::number(edge, 'g', 2);
  const int exponent = static_cast<int>(std::floor(std::log10(std::abs(edge)) + 1e-9));
  const double mantissa = edge / std::pow(10.0, exponent);
  return QStringLiteral("%1e%2").arg(QString::number(mantissa, 'g', 2)).arg(exponent);
}

bool PanelPart::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    hover_.show_tooltip(this, *static_cast<QHelpEvent*>(event));
    return true;
  }
  return QWidget::event(event);
}

QRectF PanelPart::begin_paint(QPainter& painter) {
  painter.setRenderHint(QPainter::Antialiasing);
  painter.setFont(font());
  painter.fillRect(rect(), theme().background);
  hover_.clear();
  return QRectF(rect()).adjusted(4, 2, -4, -2);
}

// ---- Error histogram ----------------------------------------------------------------------

ErrorHistogramView::ErrorHistogramView(const QuantisationSnapshot& snapshot, QWidget* parent)
    : PanelPart(parent), snapshot_(snapshot) {
  setMinimumSize(120, 80);
}

QString ErrorHistogramView::statistics_text() const {
  const TensorErrorSnapshot& e = snapshot_.tensor_error;
  return tr("RMSE %1  \u00b7  max |error| %2  \u00b7  SQNR %3")
      .arg(chart::format_number(e.rmse), chart::format_number(e.max_abs_error),
           format_db(e.sqnr_db));
}

void ErrorHistogramView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  QRectF area = begin_paint(painter);
  const Theme& t = theme();
  painted_edges_.clear();
  const TensorErrorSnapshot& e = snapshot_.tensor_error;
  const QFontMetricsF fm(font());
  const QString heading = e.tensor.isEmpty() ? tr("Quantisation error of a tensor")
                                             : tr("Error of %1 as %2").arg(e.tensor, e.type);
  area.setTop(area.top() + chart::draw_heading(painter, area, heading, t));
  const bool valid = !e.edges.empty() && e.counts.size() == e.edges.size() + 1;
  if (!valid) {
    chart::draw_note(painter, area, tr("No tensor measured yet"), t);
    return;
  }
  painter.setPen(t.text);
  // Wrapped to the chart's width: at lecture size the SQNR would be cut off.
  const QRectF stats = painter.boundingRect(QRectF(area.left(), area.top(), area.width(), 0),
                                            Qt::AlignLeft | Qt::TextWordWrap, statistics_text());
  painter.drawText(stats, Qt::AlignLeft | Qt::TextWordWrap, statistics_text());
  add_tip(stats, tr("RMSE: root mean square of quantised minus original value; SQNR: "
                    "signal power over error power in decibels (higher is better)."));
  area.setTop(stats.bottom() + 4);

  double total = 0.0;
  for (const int64_t c : e.counts) total += static_cast<double>(c);
  double top_share = 0.0;
  for (const int64_t c : e.counts) {
    top_share = std::max(top_share, total > 0 ? 100.0 * static_cast<double>(c) / total : 0.0);
  }
  const QFont tick_font = chart::small_font(font());
  const QFontMetricsF tick_metrics(tick_font);
  const chart::Frame frame =
      draw_bar_axes(painter, area, chart::nice_range(0.0, std::max(top_share, 1.0), 5),
                    tr("% of elements"), tr("error: quantised \u2212 original value"),
                    tick_metrics.height() + 4);
  const QRectF plot = frame.plot();
  const auto bins = static_cast<double>(e.counts.size());
  const double slot = plot.width() / bins;
  painter.setPen(Qt::NoPen);
  painter.setBrush(t.series(4));
  for (size_t i = 0; i < e.counts.size(); ++i) {
    const double share = total > 0 ? 100.0 * static_cast<double>(e.counts[i]) / total : 0.0;
    const QRectF bar(QPointF(plot.left() + static_cast<double>(i) * slot + 1, frame.y(share)),
                     QPointF(plot.left() + static_cast<double>(i + 1) * slot - 1, plot.bottom()));
    painter.drawRect(bar);
    const QString low = i == 0 ? QStringLiteral("-\u221e") : format_error_edge(e.edges[i - 1]);
    const QString high =
        i == e.edges.size() ? QStringLiteral("+\u221e") : format_error_edge(e.edges[i]);
    add_tip(QRectF(bar.left(), plot.top(), bar.width(), plot.height()),
            tr("Error in [%1, %2): %3 elements (%4%)")
                .arg(low, high)
                .arg(e.counts[i])
                .arg(chart::format_number(share)));
  }
  // Edge labels between the bars, thinned to every n-th when they would touch.
  painter.setFont(tick_font);
  painter.setPen(t.muted_text);
  double widest = 0.0;
  for (const double edge : e.edges) {
    widest = std::max(widest, tick_metrics.horizontalAdvance(format_error_edge(edge)));
  }
  // Only whole decades (1e-5, 1e-4, ..., 0.1 and their negatives) are labelled, every n-th of
  // them when they would touch; the half-decade edges keep their tick.
  std::vector<size_t> decades;
  for (size_t i = 0; i < e.edges.size(); ++i) {
    const double exponent = std::log10(std::abs(e.edges[i]));
    if (std::isfinite(exponent) && std::abs(exponent - std::round(exponent)) < 1e-6) {
      decades.push_back(i);
    }
  }
  const double spacing = decades.size() > 1 ? slot * static_cast<double>(e.edges.size()) /
                                                  static_cast<double>(decades.size())
                                            : plot.width();
  const auto stride = static_cast<size_t>(std::max(1.0, std::ceil((widest + 6) / spacing)));
  // The two decades nearest zero may sit one bin apart: then only "0" under the bin between.
  const size_t half = decades.size() / 2;
  const bool centre_crowded =
      decades.size() >= 2 && decades.size() % 2 == 0 &&
      static_cast<double>(decades[half] - decades[half - 1]) * slot < widest + 6;
  if (centre_crowded) {
    const double x =
        plot.left() + (static_cast<double>(decades[half - 1] + decades[half]) / 2.0 + 1.0) * slot;
    painter.drawText(QRectF(x - widest, plot.bottom() + 3, 2 * widest, tick_metrics.height()),
                     Qt::AlignHCenter | Qt::AlignTop, QStringLiteral("0"));
    painted_edges_ << QStringLiteral("0");
  }
  for (size_t i = 0; i < e.edges.size(); ++i) {
    const double x = plot.left() + static_cast<double>(i + 1) * slot;
    painter.drawLine(QPointF(x, plot.bottom()), QPointF(x, plot.bottom() + 3));
    const auto at = std::find(decades.begin(), decades.end(), i);
    if (at == decades.end()) continue;
    // Symmetric about the middle: count from the decade nearest zero on each side.
    const auto rank = static_cast<size_t>(at - decades.begin());
    const size_t distance = rank >= half ? rank - half : half - 1 - rank;
    if (distance % stride != 0 || (centre_crowded && distance == 0)) continue;
    const QString text = format_error_edge(e.edges[i]);
    painter.drawText(QRectF(x - widest, plot.bottom() + 3, 2 * widest, tick_metrics.height()),
                     Qt::AlignHCenter | Qt::AlignTop, text);
    painted_edges_ << text;
  }
}

// ---- SQNR per layer -----------------------------------------------------------------------

SqnrBarsView::SqnrBarsView(const QuantisationSnapshot& snapshot, QWidget* parent)
    : PanelPart(parent), snapshot_(snapshot) {
  setMinimumSize(120, 80);
}

QStringList SqnrBarsView::layers() const {
  QStringList result;
  for (const auto* list : {&snapshot_.weight_sqnr, &snapshot_.kv_sqnr}) {
    for (const LayerSqnr& l : *list) {
      if (!result.contains(l.layer)) result << l.layer;
    }
  }
  return result;
}

void SqnrBarsView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  QRectF area = begin_paint(painter);
  const Theme& t = theme();
  const QString heading = snapshot_.sqnr_variant.isEmpty()
                              ? tr("SQNR per layer (higher is better)")
                              : tr("SQNR per layer, %1").arg(snapshot_.sqnr_variant);
  area.setTop(area.top() + chart::draw_heading(painter, area, heading, t));
  const QStringList names = layers();
  if (names.isEmpty()) {
    chart::draw_note(painter, area, tr("No layers measured yet"), t);
    return;
  }
  const QColor weight_colour = t.series(4);
  const QColor kv_colour = t.series(0);
  area.setTop(area.top() +
              chart::draw_legend(painter, area,
                                 {{tr("weights"), weight_colour}, {tr("KV cache"), kv_colour}}, t) +
              2);

  auto find = [](const std::vector<LayerSqnr>& list, const QString& layer) {
    for (const LayerSqnr& l : list) {
      if (l.layer == layer) return l.sqnr_db;
    }
    return std::numeric_limits<double>::quiet_NaN();
  };
  double top = 10.0;
  for (const auto* list : {&snapshot_.weight_sqnr, &snapshot_.kv_sqnr}) {
    for (const LayerSqnr& l : *list) {
      if (std::isfinite(l.sqnr_db)) top = std::max(top, l.sqnr_db);
    }
  }
  const QFont tick_font = chart::small_font(font());
  const QFontMetricsF tick_metrics(tick_font);
  const chart::Frame frame = draw_bar_axes(painter, area, chart::nice_range(0.0, top * 1.08, 5),
                                           tr("SQNR (dB)"), tr("layer"), tick_metrics.height() + 4);
  const QRectF plot = frame.plot();
  add_tip(plot, tr("Signal to quantisation noise: 10 log10 of the values' power over the "
                   "error's power; each 6 dB is about one more exact bit."));
  const double slot = plot.width() / static_cast<double>(names.size());
  const double bar_width = std::min(slot * 0.38, tick_metrics.height() * 2.5);
  const auto stride = static_cast<int>(std::max(
      1.0, std::ceil((tick_metrics.horizontalAdvance(QStringLiteral("other")) + 4) / slot)));
  painter.setFont(tick_font);
  for (int i = 0; i < names.size(); ++i) {
    const double centre = plot.left() + (i + 0.5) * slot;
    const double values[2] = {find(snapshot_.weight_sqnr, names[i]),
                              find(snapshot_.kv_sqnr, names[i])};
    const QColor colours[2] = {weight_colour, kv_colour};
    const QString what[2] = {tr("weights"), tr("KV cache")};
    for (int k = 0; k < 2; ++k) {
      const double left = k == 0 ? centre - bar_width - 1 : centre + 1;
      const double v = values[k];
      if (std::isnan(v)) continue;
      // An exact layer (infinite SQNR) is drawn as an outlined bar to the top, marked "exact".
      const double shown = std::isinf(v) ? frame.y_range().max : std::max(v, 0.0);
      const QRectF bar(QPointF(left, frame.y(shown)), QPointF(left + bar_width, plot.bottom()));
      if (std::isinf(v)) {
        painter.setPen(QPen(colours[k], 1.5, Qt::DashLine));
        painter.setBrush(Qt::NoBrush);
      } else {
        painter.setPen(Qt::NoPen);
        painter.setBrush(colours[k]);
      }
      painter.drawRect(bar);
      add_tip(bar, tr("Layer %1, %2: SQNR %3").arg(names[i], what[k], format_db(v)));
    }
    if (i % stride == 0) {
      painter.setPen(t.muted_text);
      painter.drawText(QRectF(centre - slot * stride / 2.0, plot.bottom() + 3, slot * stride,
                              tick_metrics.height()),
                       Qt::AlignHCenter | Qt::AlignTop, short_layer(names[i]));
    }
  }
}

// ---- Continuations ------------------------------------------------------------------------

ContinuationView::ContinuationView(const QuantisationSnapshot& snapshot, QWidget* parent)
    : PanelPart(parent), snapshot_(snapshot) {
  setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Minimum);
}

QSize ContinuationView::minimumSizeHint() const {
  const double line = QFontMetricsF(font()).height();
  const double heading = QFontMetricsF(chart::heading_font(font())).height() + 4;
  return {120, static_cast<int>(std::ceil(heading + line + 4 + 2 * (line + 6) + 6 + 8))};
}

QSize ContinuationView::sizeHint() const {
  // Room for each continuation to wrap once.
  const double line = QFontMetricsF(font()).height();
  return minimumSizeHint() + QSize(480, static_cast<int>(std::ceil(2 * (line + 10))));
}

double ContinuationView::paint_row(QPainter& painter, const TokenContinuation& row, double top,
                                   int64_t divergent) {
  const Theme& t = theme();
  const QFontMetricsF fm(painter.font());
  const double line = fm.height();
  const double label_width = std::min(width() * 0.22, fm.horizontalAdvance(QString(16, 'n')));
  const double left = 4 + label_width + 8;
  painter.setPen(t.text);
  painter.drawText(QRectF(4, top, label_width, line + 6), Qt::AlignLeft | Qt::AlignVCenter,
                   fm.elidedText(row.label, Qt::ElideRight, label_width));
  double x = left;
  double y = top;
  const double chip_height = line + 6;
  for (size_t i = 0; i < row.pieces.size(); ++i) {
    const QString text = printable_piece(row.pieces[i]);
    const double chip_width = std::min(fm.horizontalAdvance(text) + 10, width() - left - 4.0);
    if (x + chip_width > width() - 4 && x > left) {
      x = left;
      y += chip_height + 4;
    }
    const QRectF chip(x, y, chip_width, chip_height);
    const auto index = static_cast<int64_t>(i);
    const bool after = divergent >= 0 && index > divergent;
    QColor fill = t.surface;
    if (index == divergent) fill = t.highlight;
    painter.setPen(Qt::NoPen);
    painter.setBrush(fill);
    painter.drawRoundedRect(chip, 4, 4);
    if (index == divergent) {
      ++marked_;
      painter.setPen(QPen(t.text, 2));
      painter.setBrush(Qt::NoBrush);
      painter.drawRoundedRect(chip.adjusted(-1, -1, 1, 1), 5, 5);
    }
    painter.setPen(index == divergent ? t.background : after ? t.muted_text : t.text);
    painter.drawText(chip, Qt::AlignCenter, fm.elidedText(text, Qt::ElideRight, chip_width - 6));
    QString tip = tr("Token %1: '%2'").arg(i).arg(text);
    if (i < row.ids.size()) tip += tr(" (id %1)").arg(row.ids[i]);
    if (index == divergent) tip += tr(": the first token where the two models disagree");
    if (after) tip += tr(": after the divergence, so it continues a different text");
    add_tip(chip, tip);
    ++chips_;
    x += chip_width + 4;
  }
  return y + chip_height;
}

void ContinuationView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  QRectF area = begin_paint(painter);
  const Theme& t = theme();
  chips_ = 0;
  marked_ = 0;
  const double heading =
      chart::draw_heading(painter, area, tr("The same prompt, continued greedily"), t);
  const TokenContinuation& base = snapshot_.baseline_continuation;
  const TokenContinuation& variant = snapshot_.variant_continuation;
  if (base.pieces.empty() && variant.pieces.empty()) {
    chart::draw_note(painter, area.adjusted(0, heading, 0, 0),
                     tr("No continuations yet: press Generate"), t);
    return;
  }
  const int64_t divergent = first_divergent_token(base, variant);
  const QFontMetricsF fm(font());
  double y = area.top() + heading;
  painter.setPen(t.muted_text);
  QString summary = divergent < 0 ? tr("identical for all %1 tokens").arg(base.pieces.size())
                                  : tr("first difference at token %1 (marked)").arg(divergent);
  const QString line_text = tr("Prompt: \u201c%1\u201d  \u2014  %2").arg(snapshot_.prompt, summary);
  painter.drawText(QRectF(area.left(), y, area.width(), fm.height()),
                   Qt::AlignLeft | Qt::AlignVCenter,
                   fm.elidedText(line_text, Qt::ElideMiddle, area.width()));
  y += fm.height() + 4;
  y = paint_row(painter, base, y, divergent) + 6;
  paint_row(painter, variant, y, divergent);
}

}  // namespace servescope::widgets
