#include "widgets/remote_view.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <array>

#include "widgets/chart_painting.h"
#include "widgets/panel_sections.h"
#include "widgets/panel_view.h"
#include "widgets/theme.h"

namespace servescope::widgets {

namespace {

constexpr double kShownSeconds = 120.0;  // the charts follow the last two minutes
constexpr double kMinSpanSeconds = 2.0;
constexpr int kMaxTableRows = 12;
constexpr double kLinesForFacts = 18.0;  // below it the facts would leave the chart no room

QString csv_field(QString text) {
  if (!text.contains(QLatin1Char(',')) && !text.contains(QLatin1Char('"'))) return text;
  return QLatin1Char('"') + text.replace(QLatin1Char('"'), QStringLiteral("\"\"")) +
         QLatin1Char('"');
}

// The series' newest time: the right end of every chart's axis, so the charts move together.
double newest_seconds(const RemoteView& view) {
  double newest = 0.0;
  for (const RemoteChart& chart : view.charts) {
    for (const RemoteSeries& series : chart.series) {
      if (!series.points.empty()) newest = std::max(newest, series.points.back().x());
    }
  }
  return newest;
}

// Series colours: the palette without its yellow, too faint as a thin line on a light background.
QColor series_colour(const Theme& t, size_t i) {
  constexpr int kHues[] = {0, 1, 2, 4, 5, 6};
  return t.series(kHues[i % std::size(kHues)]);
}

QString ms_text(double ms) {
  return ms < 0.0 ? QStringLiteral("-") : QStringLiteral("%1 ms").arg(chart::format_number(ms));
}

}  // namespace

QString figure_source_text(FigureSource source) {
  return source == FigureSource::kMeasured ? PanelView::tr("measured by ServeScope")
                                           : PanelView::tr("reported by the server");
}

QString remote_view_csv(const RemoteView& view) {
  QString out = QStringLiteral("chart,series,source,seconds,value\n");
  for (const RemoteChart& chart : view.charts) {
    for (const RemoteSeries& series : chart.series) {
      for (const QPointF& p : series.points) {
        out += QStringLiteral("%1,%2,%3,%4,%5\n")
                   .arg(csv_field(chart.title), csv_field(series.name),
                        csv_field(figure_source_text(series.source)))
                   .arg(p.x(), 0, 'f', 3)
                   .arg(p.y(), 0, 'g', 10);
      }
    }
  }
  if (!view.requests.empty()) {
    out += QStringLiteral("request,own,ttft_ms,tpot_ms,output_tokens,finished\n");
    for (const RemoteRequestRow& row : view.requests) {
      out += QStringLiteral("%1,%2,%3,%4,%5,%6\n")
                 .arg(row.request)
                 .arg(row.own ? 1 : 0)
                 .arg(row.ttft_ms, 0, 'f', 3)
                 .arg(row.tpot_ms, 0, 'f', 3)
                 .arg(row.output_tokens)
                 .arg(row.finished ? 1 : 0);
    }
  }
  return out;
}

void PanelView::set_remote_view(std::optional<RemoteView> view) {
  const bool entering = view && !remote_;
  const bool leaving = !view && remote_;
  remote_ = std::move(view);
  if (entering) {
    set_highlight(QString());  // a lesson's mark points at the panel's own parts
    // The panel's own controls (the attention panel's layer and head, the quantisation lab's
    // tabs) act on the local engine's figures: hidden while the remote view is painted.
    for (QWidget* child : findChildren<QWidget*>(Qt::FindDirectChildrenOnly)) {
      if (child == highlight_overlay_ || child->isHidden()) continue;
      child->hide();
      hidden_for_remote_.push_back(child);
    }
  }
  if (leaving) {
    for (const QPointer<QWidget>& child : hidden_for_remote_) {
      if (child) child->show();
    }
    hidden_for_remote_.clear();
  }
  update();
}

void PanelView::paint_remote_view() {
  QPainter painter(this);
  painter.setRenderHint(QPainter::Antialiasing);
  painter.setFont(font());
  clear_tooltips();
  const Theme& t = theme();
  painter.fillRect(rect(), t.background);
  const RemoteView& view = *remote_;
  const QRectF area = QRectF(rect()).adjusted(12, 8, -12, -8);
  const QFontMetricsF metrics(font());
  const qreal line = metrics.lineSpacing();
  qreal y = area.top() + chart::draw_heading(painter, area, view.heading, t);

  const auto paragraph = [&](const QString& text, const QColor& colour) {
    const QRectF box(area.left(), y, area.width(), area.bottom() - y);
    const QRectF used = metrics.boundingRect(box, Qt::TextWordWrap, text);
    painter.setPen(colour);
    painter.drawText(box, Qt::TextWordWrap, text);
    y += used.height() + 2;
  };
  // In little room (a projector's strip) the facts and the note on what a server cannot show
  // give their lines to the charts, saying so as the other panels do.
  const bool roomy = height() / line >= kLinesForFacts || view.charts.empty();
  QString not_available = view.not_available;
  if (roomy) {
    for (const QString& fact : view.facts) paragraph(fact, t.text);
  } else {
    add_tooltip(QRectF(area.left(), area.top(), area.width(), y - area.top()),
                (view.facts + QStringList{view.not_available}).join(QLatin1Char('\n')));
    paragraph(tr("Hidden for room: the server's facts and what it cannot show. A larger window "
                 "or T (hide text) shows them."),
              t.muted_text);
    not_available.clear();
  }
  if (!view.problem.isEmpty()) paragraph(view.problem, t.warning);

  // The note on what cannot be shown goes last, at the bottom; its height is kept free.
  qreal note_height = 0.0;
  if (!not_available.isEmpty()) {
    note_height = metrics
                      .boundingRect(QRectF(0, 0, area.width(), area.height()), Qt::TextWordWrap,
                                    not_available)
                      .height() +
                  6;
  }
  if (view.charts.empty() && view.requests.empty()) {
    chart::draw_note(painter, QRectF(area.left(), y, area.width(), area.bottom() - y),
                     view.not_available, t);
    return;
  }
  const qreal bottom = area.bottom() - note_height;
  // A wide, short panel (a projector's strip) puts the table beside the charts; otherwise it
  // goes under them.
  QRectF charts_area(area.left(), y, area.width(), bottom - y);
  QRectF table_area;
  if (!view.requests.empty()) {
    if (area.width() > 2.2 * (bottom - y)) {
      charts_area.setWidth(area.width() * 0.55);
      table_area = QRectF(charts_area.right() + line, y, area.right() - charts_area.right() - line,
                          bottom - y);
    } else {
      const auto rows = std::min<size_t>(view.requests.size(), kMaxTableRows);
      const qreal table_height =
          std::min((static_cast<qreal>(rows) + 2.5) * line, (bottom - y) * 0.45);
      charts_area.setBottom(bottom - table_height);
      table_area = QRectF(area.left(), bottom - table_height, area.width(), table_height);
    }
  }
  if (!view.charts.empty() && charts_area.height() > 4 * line) {
    const qreal each = charts_area.height() / static_cast<qreal>(view.charts.size());
    qreal top = charts_area.top();
    for (const RemoteChart& c : view.charts) {
      paint_remote_chart(painter, QRectF(charts_area.left(), top, charts_area.width(), each - 4), c);
      top += each;
    }
  }
  if (table_area.height() > 2 * line) paint_remote_requests(painter, table_area, view.requests);
  if (note_height > 0.0) {
    painter.setPen(t.muted_text);
    painter.drawText(QRectF(area.left(), bottom + 6, area.width(), note_height), Qt::TextWordWrap,
                     not_available);
  }
}

qreal PanelView::paint_remote_chart(QPainter& painter, const QRectF& area,
                                    const RemoteChart& c) {
  const Theme& t = theme();
  const qreal line = QFontMetricsF(font()).lineSpacing();
  qreal y = area.top();
  painter.setPen(t.text);
  QFont bold = font();
  bold.setBold(true);
  painter.setFont(bold);
  painter.drawText(QRectF(area.left(), y, area.width(), line), Qt::AlignLeft | Qt::AlignVCenter,
                   c.title);
  painter.setFont(font());
  y += line;

  // In little room the legend names the series alone and one line says what the dashes mean.
  const bool compact = height() / line < kLinesForExplanations;
  if (compact) {
    const QString key = tr("dashed: %1; solid: %2")
                            .arg(figure_source_text(FigureSource::kReported),
                                 figure_source_text(FigureSource::kMeasured));
    const QRectF box(area.left(), y, area.width(), area.bottom() - y);
    painter.setPen(t.muted_text);
    painter.drawText(box, Qt::AlignLeft | Qt::TextWordWrap, key);
    y += QFontMetricsF(font()).boundingRect(box, Qt::TextWordWrap, key).height();
  }
  std::vector<chart::LegendEntry> legend;
  for (size_t i = 0; i < c.series.size(); ++i) {
    const RemoteSeries& s = c.series[i];
    chart::LegendEntry entry;
    entry.label =
        compact ? s.name : QStringLiteral("%1 (%2)").arg(s.name, figure_source_text(s.source));
    entry.series = s.name;
    entry.color = series_colour(t, i);
    entry.line = s.source == FigureSource::kMeasured ? Qt::SolidLine : Qt::DashLine;
    legend.push_back(entry);
  }
  y += draw_series_legend(painter, QRectF(area.left(), y, area.width(), area.bottom() - y), c.id,
                          legend) +
       2;
  if (area.bottom() - y < 3 * line) return area.height();

  // From a little before the user's latest request (the run being talked about), at most the
  // last two minutes.
  const double newest = std::max(newest_seconds(*remote_), kMinSpanSeconds);
  double oldest = std::max(0.0, newest - kShownSeconds);
  if (remote_->from_seconds >= 0.0) oldest = std::max(oldest, remote_->from_seconds);
  const chart::Range full{std::min(oldest, newest - kMinSpanSeconds), newest};
  const chart::Range shown = x_window(c.id, full, kMinSpanSeconds);
  double top = c.y_max;
  for (const RemoteSeries& s : c.series) {
    if (series_hidden(c.id, s.name)) continue;
    for (const QPointF& p : s.points) {
      if (p.x() >= shown.min && p.x() <= shown.max) top = std::max(top, p.y());
    }
  }
  chart::AxesSpec spec;
  spec.x_label = tr("seconds since connecting");
  spec.y_label = c.y_label;
  spec.x = shown;
  spec.y = chart::nice_range(0.0, std::max(top, c.integer_y ? 1.0 : 1e-9), 4, c.integer_y);
  spec.integer_y = c.integer_y;
  const chart::Frame frame =
      chart::draw_axes(painter, QRectF(area.left(), y, area.width(), area.bottom() - y), spec, t);
  mark_zoomable(painter, c.id, frame.plot());

  painter.save();
  painter.setClipRect(frame.plot().adjusted(-2, -2, 2, 2));
  std::vector<std::pair<QPointF, QString>> dots;
  for (size_t i = 0; i < c.series.size(); ++i) {
    const RemoteSeries& s = c.series[i];
    if (series_hidden(c.id, s.name) || s.points.empty()) continue;
    QPainterPath path;
    bool started = false;
    for (const QPointF& p : s.points) {
      if (p.x() < shown.min - 1.0 || p.x() > shown.max + 1.0) continue;
      const QPointF at = frame.point(p.x(), p.y());
      if (started) {
        path.lineTo(at);
      } else {
        path.moveTo(at);
        started = true;
      }
      dots.emplace_back(at, tr("%1 at %2 s: %3 (%4)")
                                .arg(s.name, chart::format_number(p.x()),
                                     chart::format_number(p.y()), figure_source_text(s.source)));
    }
    QPen pen(series_colour(t, i), 2.0);
    pen.setStyle(s.source == FigureSource::kMeasured ? Qt::SolidLine : Qt::DashLine);
    painter.setPen(pen);
    painter.setBrush(Qt::NoBrush);
    painter.drawPath(path);
  }
  painter.restore();
  add_point_tooltips(std::move(dots));
  return area.height();
}

void PanelView::paint_remote_requests(QPainter& painter, const QRectF& area,
                                      const std::vector<RemoteRequestRow>& rows) {
  const Theme& t = theme();
  const qreal line = QFontMetricsF(font()).lineSpacing();
  QFont bold = font();
  bold.setBold(true);
  painter.setFont(bold);
  painter.setPen(t.text);
  const QString title =
      tr("Latency per request (%1)").arg(figure_source_text(FigureSource::kMeasured));
  // Wrapped where the column is narrow (beside the charts on a projector).
  const qreal title_height =
      QFontMetricsF(bold).boundingRect(QRectF(area.left(), area.top(), area.width(), area.height()),
                                       Qt::TextWordWrap, title)
          .height();
  painter.drawText(QRectF(area.left(), area.top(), area.width(), title_height),
                   Qt::AlignLeft | Qt::TextWordWrap, title);
  add_tooltip(QRectF(area.left(), area.top(), area.width(), title_height + line),
              tr("On ServeScope's clock, as a user of the server sees them: TTFT from sending the "
                 "request to its first token (queueing and prefill at the server, and the network, "
                 "included); TPOT the mean time between its later tokens."));
  painter.setFont(font());
  const std::array<QString, 4> headers = {tr("request"), tr("TTFT"), tr("TPOT"),
                                          tr("tokens")};
  qreal y = area.top() + title_height;
  const auto fit = static_cast<size_t>(std::max(0.0, (area.bottom() - y - line) / line));
  // The newest rows, and the user's newest among them even when it is older.
  std::vector<const RemoteRequestRow*> shown;
  for (auto it = rows.rbegin(); it != rows.rend() && shown.size() < fit; ++it) {
    shown.push_back(&*it);
  }
  const auto own = std::find_if(rows.rbegin(), rows.rend(),
                                [](const RemoteRequestRow& r) { return r.own; });
  if (own != rows.rend() && fit > 0 &&
      std::find(shown.begin(), shown.end(), &*own) == shown.end()) {
    shown.back() = &*own;
  }
  std::vector<std::array<QString, 4>> cells;
  for (const RemoteRequestRow* row : shown) {
    cells.push_back({row->own ? tr("yours, %1").arg(row->request) : QString::number(row->request),
                     ms_text(row->ttft_ms), ms_text(row->tpot_ms),
                     row->finished ? QString::number(row->output_tokens)
                                   : tr("%1 so far").arg(row->output_tokens)});
  }
  // Each column as wide as its widest text, the room left shared out between them.
  const QFontMetricsF metrics(font());
  constexpr qreal kSwatch = 8;
  std::array<qreal, 4> width{};
  for (size_t i = 0; i < headers.size(); ++i) {
    width[i] = metrics.horizontalAdvance(headers[i]);
    for (const auto& row : cells) width[i] = std::max(width[i], metrics.horizontalAdvance(row[i]));
  }
  const qreal used = kSwatch + width[0] + width[1] + width[2] + width[3];
  const qreal gap = std::max<qreal>(4.0, (area.width() - used) / 4.0);
  std::array<qreal, 4> left{};
  left[0] = area.left() + kSwatch;
  for (size_t i = 1; i < left.size(); ++i) left[i] = left[i - 1] + width[i - 1] + gap;
  painter.setPen(t.muted_text);
  for (size_t i = 0; i < headers.size(); ++i) {
    painter.drawText(QRectF(left[i], y, width[i] + gap, line), Qt::AlignLeft | Qt::AlignVCenter,
                     headers[i]);
  }
  y += line;
  for (size_t r = 0; r < shown.size(); ++r) {
    painter.fillRect(QRectF(area.left(), y + line * 0.2, 4, line * 0.6),
                     t.request(shown[r]->request, shown[r]->own));
    painter.setPen(t.text);
    for (size_t i = 0; i < cells[r].size(); ++i) {
      painter.drawText(QRectF(left[i], y, width[i] + gap, line), Qt::AlignLeft | Qt::AlignVCenter,
                       cells[r][i]);
    }
    y += line;
  }
}

}  // namespace servescope::widgets
