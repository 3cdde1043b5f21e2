#include "widgets/quant_block_view.h"

#include <QPainter>
#include <algorithm>
#include <cmath>

#include "widgets/chart_painting.h"
#include "widgets/theme.h"

namespace servescope::widgets {
namespace {

// The value integer q decodes to in the sub-block `sub` (K-quants) or the whole block.
double level(const QuantBlockSnapshot& b, const QuantSubBlock* sub, int q) {
  if (sub != nullptr) return sub->scale * q - sub->min;
  return b.d * q + (b.has_min ? b.m : 0.0);
}

QString short_value(double value) { return QString::number(value, 'g', 2); }

}  // namespace

QuantBlockView::QuantBlockView(const QuantisationSnapshot& snapshot, QWidget* parent)
    : PanelPart(parent), snapshot_(snapshot) {
  setMinimumSize(320, 200);
}

QSize QuantBlockView::minimumSizeHint() const { return {320, 200}; }

void QuantBlockView::set_type(const QString& type) {
  type_ = type;
  update();
}

const QuantBlockSnapshot* QuantBlockView::block() const {
  for (const QuantBlockSnapshot& b : snapshot_.blocks) {
    if (b.type == type_) return &b;
  }
  return snapshot_.blocks.empty() ? nullptr : &snapshot_.blocks.front();
}

QString QuantBlockView::format_value(double value) { return QString::number(value, 'g', 5); }

QString QuantBlockView::fp16_text(const QString& name, double value, uint16_t bits) {
  return QStringLiteral("%1 = %2 (fp16 0x%3)")
      .arg(name, format_value(value))
      .arg(bits, 4, 16, QLatin1Char('0'));
}

void QuantBlockView::text(QPainter& painter, const QRectF& rect, int flags, const QString& s) {
  painter.drawText(rect, flags, s);
  painted_ << s;
}

void QuantBlockView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  QRectF area = begin_paint(painter);
  painted_.clear();
  const Theme& t = theme();
  const QuantBlockSnapshot* b = block();
  if (b == nullptr || b->originals.empty()) {
    area.setTop(area.top() + chart::draw_heading(painter, area, tr("Inside a block"), t));
    chart::draw_note(painter, area, tr("No block measured yet"), t);
    return;
  }
  const auto n = static_cast<int64_t>(b->originals.size());
  const QString heading = tr("%1, row %2, elements %3\u2013%4 stored as %5")
                              .arg(b->tensor)
                              .arg(b->row)
                              .arg(b->first_column)
                              .arg(b->first_column + n - 1)
                              .arg(b->type);
  area.setTop(area.top() + chart::draw_heading(painter, area, heading, t));
  painted_ << heading;
  area.setTop(area.top() + paint_bytes(painter, area, *b) + 6);
  area.setTop(area.top() + paint_scales(painter, area, *b) + 4);
  paint_values(painter, area, *b);
}

double QuantBlockView::paint_bytes(QPainter& painter, const QRectF& area,
                                   const QuantBlockSnapshot& b) {
  const Theme& t = theme();
  const QFontMetricsF fm(font());
  const QString summary = tr("%1 bytes for %2 weights: %3 bits per weight")
                              .arg(b.block_bytes)
                              .arg(b.originals.size())
                              .arg(b.bits_per_weight(), 0, 'f', 2);
  painter.setPen(t.text);
  const QRectF line(area.left(), area.top(), area.width(), fm.height());
  text(painter, line, Qt::AlignLeft | Qt::AlignVCenter, summary);
  // The fields in storage order; each at least as wide as its label, the rest by bytes.
  const double bar_top = line.bottom() + 3;
  const double bar_height = fm.height() * 1.5;
  std::vector<double> widths;
  double label_total = 0.0;
  for (const QuantByteField& f : b.layout) {
    widths.push_back(fm.horizontalAdvance(QStringLiteral("%1 %2 B").arg(f.name).arg(f.bytes)) + 10);
    label_total += widths.back();
  }
  const double spare = std::max(0.0, area.width() - label_total);
  double x = area.left();
  for (size_t i = 0; i < b.layout.size(); ++i) {
    const QuantByteField& f = b.layout[i];
    widths[i] += b.block_bytes > 0 ? spare * f.bytes / b.block_bytes : 0.0;
    const QRectF cell(x, bar_top, widths[i], bar_height);
    QColor fill = t.series(static_cast<int>(i) + 1);
    fill.setAlpha(t.kind == ThemeKind::kDark ? 110 : 70);
    painter.fillRect(cell, fill);
    painter.setPen(QPen(t.series(static_cast<int>(i) + 1), 1.5));
    painter.drawRect(cell.adjusted(0.5, 0.5, -0.5, -0.5));
    painter.setPen(t.text);
    text(painter, cell, Qt::AlignCenter, QStringLiteral("%1 %2 B").arg(f.name).arg(f.bytes));
    add_tip(cell, tr("%1: %2 bytes, %3").arg(f.name).arg(f.bytes).arg(f.meaning));
    x += widths[i];
  }
  return bar_top + bar_height - area.top();
}

double QuantBlockView::paint_scales(QPainter& painter, const QRectF& area,
                                    const QuantBlockSnapshot& b) {
  const Theme& t = theme();
  const QFontMetricsF fm(font());
  const bool k_quant = !b.sub_blocks.empty();
  QStringList parts;
  parts << fp16_text(k_quant ? QStringLiteral("super-block d") : QStringLiteral("d"), b.d,
                     b.d_bits);
  if (b.has_min) {
    parts << fp16_text(k_quant ? QStringLiteral("dmin") : QStringLiteral("m"), b.m, b.m_bits);
  }
  parts << b.formula;
  double x = area.left();
  double y = area.top();
  painter.setPen(t.text);
  for (const QString& part : parts) {
    const double w = fm.horizontalAdvance(part) + 24;
    if (x > area.left() && x + w > area.right()) {  // wrap
      x = area.left();
      y += fm.height();
    }
    text(painter, QRectF(x, y, w, fm.height()), Qt::AlignLeft | Qt::AlignVCenter, part);
    x += w;
  }
  add_tip(QRectF(area.left(), area.top(), area.width(), y + fm.height() - area.top()),
          k_quant ? tr("The super-block's fp16 d (and dmin) multiply every sub-block's small "
                       "integer scale (and min).")
                  : tr("The block's fp16 scale%1: one per 32 weights.")
                        .arg(b.has_min ? tr(" and minimum") : QString()));
  return y + fm.height() - area.top();
}

void QuantBlockView::paint_values(QPainter& painter, const QRectF& area,
                                  const QuantBlockSnapshot& b) {
  const Theme& t = theme();
  const QFont small = chart::small_font(font());
  const QFontMetricsF sm(small);
  const QFontMetricsF fm(font());
  const int n = static_cast<int>(b.originals.size());
  const bool k_quant = !b.sub_blocks.empty();

  // Legend, then the rows of integers above the plot: the quants (one block of 32) or each
  // sub-block's stored scale and min (K-quants).
  const std::vector<chart::LegendEntry> legend = {
      {tr("original weight"), t.series(0)},
      {tr("stored value (decoded)"), t.series(1)},
      {tr("error"), t.series(5)},
      {tr("values the %1 can store").arg(k_quant ? tr("sub-block") : tr("block")), t.grid}};
  QRectF rest = area;
  rest.setTop(rest.top() + chart::draw_legend(painter, rest, legend, t) + 2);
  const int integer_rows = k_quant ? (b.has_min ? 4 : 2) : 1;
  const double rows_height = integer_rows * (sm.height() + 1);
  const double errors_height = fm.height() + 2;  // the error summary under the axes

  double lo = 0.0;
  double hi = 0.0;
  for (int i = 0; i < n; ++i) {
    lo = std::min(
        {lo, b.originals[static_cast<size_t>(i)], b.reconstructed[static_cast<size_t>(i)]});
    hi = std::max(
        {hi, b.originals[static_cast<size_t>(i)], b.reconstructed[static_cast<size_t>(i)]});
  }
  chart::AxesSpec spec;
  spec.x_label = tr("element of the block");
  spec.y_label = tr("weight value");
  spec.x = {-0.5, n - 0.5};
  spec.y = chart::nice_range(lo, hi, 5);
  spec.integer_x = true;
  const QRectF axes_area(rest.left(), rest.top() + rows_height, rest.width(),
                         rest.height() - rows_height - errors_height);
  const chart::Frame frame = chart::draw_axes(painter, axes_area, spec, t);
  const QRectF plot = frame.plot();
  const double slot = plot.width() / n;

  // Row labels left of the plot, integers above each element or sub-block.
  painter.setFont(small);
  const auto row_rect = [&](int row) {
    return QRectF(plot.left(), rest.top() + row * (sm.height() + 1), plot.width(), sm.height());
  };
  const auto row_label = [&](int row, const QString& label) {
    painter.setPen(t.muted_text);
    text(painter,
         QRectF(rest.left(), row_rect(row).top(), plot.left() - rest.left() - 4, sm.height()),
         Qt::AlignRight | Qt::AlignVCenter, label);
  };
  if (!k_quant) {
    row_label(0, tr("q"));
    painter.setPen(t.text);
    for (int i = 0; i < n && static_cast<size_t>(i) < b.quants.size(); ++i) {
      const QRectF cell(plot.left() + i * slot, row_rect(0).top(), slot, sm.height());
      text(painter, cell, Qt::AlignCenter, QString::number(b.quants[static_cast<size_t>(i)]));
    }
    add_tip(row_rect(0),
            tr("q: the integer each element is stored as (%1 bits)").arg(b.quant_bits));
  } else {
    // One row per stored number (and the scale or min it makes). A row whose values are wider
    // than a sub-block (16 sub-blocks on a narrow panel) is left to the sub-blocks' tooltips.
    std::vector<QStringList> rows(b.has_min ? 4 : 2);
    for (const QuantSubBlock& sub : b.sub_blocks) {
      rows[0] << QString::number(sub.scale_q);
      rows[1] << short_value(sub.scale);
      if (b.has_min) {
        rows[2] << QString::number(sub.min_q);
        rows[3] << short_value(sub.min);
      }
    }
    const QStringList labels = {tr("scale"), tr("= d \u00d7"), tr("min"), tr("= dmin \u00d7")};
    for (size_t row = 0; row < rows.size(); ++row) {
      const bool fits = std::all_of(rows[row].begin(), rows[row].end(), [&](const QString& v) {
        return sm.horizontalAdvance(v) <= b.sub_blocks.front().count * slot - 2;
      });
      if (!fits) continue;
      row_label(static_cast<int>(row), labels[static_cast<qsizetype>(row)]);
      painter.setPen(row % 2 == 0 ? t.text : t.muted_text);
      for (size_t i = 0; i < b.sub_blocks.size(); ++i) {
        const QuantSubBlock& sub = b.sub_blocks[i];
        text(painter,
             QRectF(plot.left() + sub.first * slot, row_rect(static_cast<int>(row)).top(),
                    sub.count * slot, sm.height()),
             Qt::AlignCenter, rows[row][static_cast<qsizetype>(i)]);
      }
    }
    for (const QuantSubBlock& sub : b.sub_blocks) {
      const double left = plot.left() + sub.first * slot;
      const double width = sub.count * slot;
      add_tip(QRectF(left, rest.top(), width, rows_height + plot.height()),
              b.has_min
                  ? tr("Sub-block of elements %1\u2013%2: scale %3 = d \u00d7 %4, min %5 = dmin "
                       "\u00d7 %6")
                        .arg(sub.first)
                        .arg(sub.first + sub.count - 1)
                        .arg(format_value(sub.scale))
                        .arg(sub.scale_q)
                        .arg(format_value(sub.min))
                        .arg(sub.min_q)
                  : tr("Sub-block of elements %1\u2013%2: scale %3 = d \u00d7 %4")
                        .arg(sub.first)
                        .arg(sub.first + sub.count - 1)
                        .arg(format_value(sub.scale))
                        .arg(sub.scale_q));
    }
  }

  // The representable levels of each block or sub-block, where they are far enough apart to
  // see; sub-block borders.
  painter.save();
  painter.setClipRect(plot);
  const auto draw_levels = [&](const QuantSubBlock* sub, double left, double right) {
    const double step = std::abs(frame.y(level(b, sub, 1)) - frame.y(level(b, sub, 0)));
    if (step < 3.0) return;
    QColor c = t.muted_text;
    c.setAlpha(70);
    painter.setPen(QPen(c, 1));
    for (int q = b.quant_min; q <= b.quant_max; ++q) {
      const double y = frame.y(level(b, sub, q));
      painter.drawLine(QPointF(left, y), QPointF(right, y));
    }
  };
  if (k_quant) {
    for (const QuantSubBlock& sub : b.sub_blocks) {
      const double left = plot.left() + sub.first * slot;
      draw_levels(&sub, left, left + sub.count * slot);
      painter.setPen(QPen(t.muted_text, 1, Qt::DashLine));
      if (sub.first > 0) painter.drawLine(QPointF(left, plot.top()), QPointF(left, plot.bottom()));
    }
  } else {
    draw_levels(nullptr, plot.left(), plot.right());
  }
  // Every element: error segment, decoded value as a bar, original as a ring.
  const double radius = std::clamp(slot * 0.3, 1.5, 5.0);
  double sum_squared = 0.0;
  double max_error = 0.0;
  for (int i = 0; i < n; ++i) {
    const auto at = static_cast<size_t>(i);
    const double cx = plot.left() + (i + 0.5) * slot;
    const double y_original = frame.y(b.originals[at]);
    const double y_decoded = frame.y(b.reconstructed[at]);
    const double error = b.reconstructed[at] - b.originals[at];
    sum_squared += error * error;
    max_error = std::max(max_error, std::abs(error));
    painter.setPen(QPen(t.series(5), std::max(1.0, std::min(2.0, slot * 0.2))));
    painter.drawLine(QPointF(cx, y_original), QPointF(cx, y_decoded));
    painter.setPen(QPen(t.series(1), 3, Qt::SolidLine, Qt::FlatCap));
    const double half = std::max(1.5, slot * 0.38);
    painter.drawLine(QPointF(cx - half, y_decoded), QPointF(cx + half, y_decoded));
    painter.setPen(QPen(t.series(0), 1.5));
    painter.setBrush(Qt::NoBrush);
    painter.drawEllipse(QPointF(cx, y_original), radius, radius);
    const QString quant =
        at < b.quants.size() ? QString::number(b.quants[at]) : QStringLiteral("?");
    add_tip(QRectF(plot.left() + i * slot, plot.top(), slot, plot.height()),
            tr("Element %1: original %2, stored q = %3, decoded %4, error %5")
                .arg(b.first_column + i)
                .arg(format_value(b.originals[at]), quant, format_value(b.reconstructed[at]),
                     format_value(error)));
  }
  painter.restore();

  painter.setFont(font());
  painter.setPen(t.text);
  const double rmse = std::sqrt(sum_squared / n);
  text(painter, QRectF(plot.left(), rest.bottom() - errors_height + 2, plot.width(), fm.height()),
       Qt::AlignLeft | Qt::AlignVCenter,
       tr("This block's error: RMSE %1 \u00b7 max |error| %2")
           .arg(format_value(rmse), format_value(max_error)));
}

}  // namespace servescope::widgets
