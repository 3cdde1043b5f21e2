#include "widgets/timeline_panel.h"

#include <QPainter>
#include <QPainterPath>
#include <algorithm>

#include "widgets/theme.h"

namespace servescope::widgets {
namespace {

constexpr QSize kMinimumSize(560, 320);
QString chart_id() { return QStringLiteral("lives"); }

struct StageStyle {
  QColor colour;
  Qt::BrushStyle pattern;
};

// The same meanings as the other panels: prefill hatched, recompute cross-hatched, decode solid.
StageStyle stage_style(LifeStageView stage, const Theme& t) {
  switch (stage) {
    case LifeStageView::kQueued:
      return {t.surface, Qt::SolidPattern};
    case LifeStageView::kPrefill:
      return {t.prefill, Qt::BDiagPattern};
    case LifeStageView::kDecode:
      return {t.decode, Qt::SolidPattern};
    case LifeStageView::kPreempted:
      return {t.warning, Qt::HorPattern};
    case LifeStageView::kRecompute:
      return {t.recompute, Qt::DiagCrossPattern};
  }
  return {t.surface, Qt::SolidPattern};
}

QString ms_text(double ms) { return QObject::tr("%1 ms").arg(chart::format_number(ms)); }

double duration_ms(const LifeBar& bar) { return bar.end_ms - bar.start_ms; }

// "1 token", "14 tokens".
QString count_text(int64_t n, const QString& one, const QString& many) {
  return QStringLiteral("%1 %2").arg(n).arg(n == 1 ? one : many);
}

// The bar's position among the row's bars of its stage: (1-based index, count).
std::pair<int, int> place_among_stage(const RequestLifeRow& row, size_t bar) {
  int index = 0, count = 0;
  for (size_t i = 0; i < row.bars.size(); ++i) {
    if (row.bars[i].stage != row.bars[bar].stage) continue;
    ++count;
    if (i <= bar) index = count;
  }
  return {index, count};
}

}  // namespace

QString life_stage_key(LifeStageView stage) {
  switch (stage) {
    case LifeStageView::kQueued:
      return QStringLiteral("queued");
    case LifeStageView::kPrefill:
      return QStringLiteral("prefill");
    case LifeStageView::kDecode:
      return QStringLiteral("decode");
    case LifeStageView::kPreempted:
      return QStringLiteral("preempted");
    case LifeStageView::kRecompute:
      return QStringLiteral("recompute");
  }
  return {};
}

TimelinePanel::TimelinePanel(QWidget* parent) : PanelView(parent) {}

void TimelinePanel::set_snapshot(TimelineSnapshot snapshot) {
  snapshot_ = std::move(snapshot);
  update();
}

QString TimelinePanel::title() const { return tr("Timeline"); }

QSize TimelinePanel::minimumSizeHint() const { return kMinimumSize; }

QString TimelinePanel::csv() const {
  QString out = QStringLiteral("request,yours,stage,start_ms,end_ms,duration_ms,steps,tokens\n");
  for (const RequestLifeRow& row : snapshot_.rows) {
    const bool own = snapshot_.own_requests.contains(row.request);
    for (const LifeBar& bar : row.bars) {
      out += QStringLiteral("%1,%2,%3,%4,%5,%6,%7,%8\n")
                 .arg(row.request)
                 .arg(own ? 1 : 0)
                 .arg(life_stage_key(bar.stage))
                 .arg(bar.start_ms, 0, 'f', 3)
                 .arg(bar.end_ms, 0, 'f', 3)
                 .arg(duration_ms(bar), 0, 'f', 3)
                 .arg(bar.steps)
                 .arg(bar.tokens);
    }
  }
  return out;
}

QRectF TimelinePanel::bar_rect(size_t row, size_t bar) const {
  if (row < first_shown_row()) return {};
  const size_t shown = row - first_shown_row();
  if (shown >= bar_rects_.size() || bar >= bar_rects_[shown].size()) return {};
  return bar_rects_[shown][bar];
}

QString TimelinePanel::queue_summary() const {
  double total = 0.0, longest = -1.0;
  int64_t longest_request = -1, counted = 0;
  for (size_t i = first_shown_row(); i < snapshot_.rows.size(); ++i) {
    const RequestLifeRow& row = snapshot_.rows[i];
    if (row.bars.empty() || row.bars.front().stage != LifeStageView::kQueued) continue;
    const double waited = duration_ms(row.bars.front());
    total += waited;
    ++counted;
    if (waited > longest) {
      longest = waited;
      longest_request = row.request;
    }
  }
  if (counted == 0) return {};
  return tr("Waited in the queue: mean %1, longest %2 (%3), over %4")
      .arg(ms_text(total / double(counted)), ms_text(longest),
           snapshot_.own_requests.name(longest_request),
           count_text(counted, tr("request"), tr("requests")));
}

std::vector<chart::LegendEntry> TimelinePanel::legend() const {
  const Theme& t = theme();
  std::vector<chart::LegendEntry> entries;
  const auto add = [&](LifeStageView stage, const QString& label) {
    const StageStyle s = stage_style(stage, t);
    // The queued bar is the surface colour with an outline: its swatch is the outline.
    const bool queued = stage == LifeStageView::kQueued;
    entries.push_back({label, queued ? t.muted_text : s.colour, s.pattern, queued});
  };
  add(LifeStageView::kQueued, tr("queued"));
  add(LifeStageView::kPrefill, tr("prefill (a block per chunk)"));
  add(LifeStageView::kDecode, tr("decode"));
  add(LifeStageView::kPreempted, tr("preempted"));
  add(LifeStageView::kRecompute, tr("recompute"));
  return entries;
}

QString TimelinePanel::row_text(const RequestLifeRow& row) const {
  QString name = snapshot_.own_requests.name(row.request);
  name[0] = name[0].toUpper();
  QStringList parts;
  if (!row.bars.empty() && row.bars.front().stage == LifeStageView::kQueued) {
    parts << tr("queued %1").arg(ms_text(duration_ms(row.bars.front())));
  }
  if (row.ttft_ms > 0.0) parts << tr("TTFT %1").arg(ms_text(row.ttft_ms));
  if (row.tpot_ms > 0.0) parts << tr("TPOT %1").arg(ms_text(row.tpot_ms));
  parts << count_text(row.output_tokens, tr("output token"), tr("output tokens"));
  QString text = name + QStringLiteral(": ") + parts.join(QStringLiteral(", ")) +
                 (row.finished ? tr("; finished (%1).").arg(row.finish_reason)
                               : tr("; still running: its figures so far."));
  text = with_definition(text, snapshot_.help.ttft);
  return with_definition(text, snapshot_.help.tpot);
}

QString TimelinePanel::bar_text(const RequestLifeRow& row, size_t index) const {
  const LifeBar& bar = row.bars[index];
  QString name = snapshot_.own_requests.name(row.request);
  name[0] = name[0].toUpper();
  const auto [nth, count] = place_among_stage(row, index);
  const QString time = ms_text(duration_ms(bar));
  switch (bar.stage) {
    case LifeStageView::kQueued:
      return tr("%1 waited %2 in the queue: no step had run any of its tokens yet.")
          .arg(name, time);
    case LifeStageView::kPrefill:
      return tr("%1, prefill chunk %2 of %3: %4, %5 (from its step's start to the next step's).")
          .arg(name)
          .arg(nth)
          .arg(count)
          .arg(count_text(bar.tokens, tr("prompt token"), tr("prompt tokens")), time);
    case LifeStageView::kDecode:
      return tr("%1 decoding: %2, one token each, %3.")
          .arg(name, count_text(bar.steps, tr("step"), tr("steps")), time);
    case LifeStageView::kPreempted:
      return tr("%1 was preempted: its KV blocks were taken for others, and it waited %2 to "
                "run again.")
          .arg(name, time);
    case LifeStageView::kRecompute:
      return tr("%1, recompute chunk %2 of %3: %4 of its prompt and outputs computed again "
                "after the preemption, %5.")
          .arg(name)
          .arg(nth)
          .arg(count)
          .arg(count_text(bar.tokens, tr("token"), tr("tokens")), time);
  }
  return {};
}

void TimelinePanel::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.setRenderHint(QPainter::Antialiasing);
  painter.setFont(font());
  clear_tooltips();
  bar_rects_.clear();
  if (snapshot_.rows.empty()) {
    paint_empty_state(painter, tr("No requests yet: press Generate to see your request's life "
                                  "here (add classmates to see them queue)."));
    return;
  }
  if (paint_if_too_small(painter, kMinimumSize)) return;
  const Theme& t = theme();
  painter.fillRect(rect(), t.background);
  const QRectF area = QRectF(rect()).adjusted(12, 8, -12, -8);
  qreal y = area.top();
  y += chart::draw_heading(
      painter, area,
      tr("Each request's life: %1")
          .arg(snapshot_.policy.isEmpty() ? tr("continuous batching") : snapshot_.policy),
      t);
  add_tooltip(QRectF(area.left(), area.top(), area.width(), y - area.top()),
              tr("One row per request, time left to right on the engine's clock: waiting in "
                 "the queue, its prompt's chunks, decoding, preempted and recomputed, until it "
                 "left. Every bar is measured."));
  y += paint_pacing_note(painter, QRectF(area.left(), y, area.width(), area.height()),
                         snapshot_.pacing_note);
  y += chart::draw_legend(painter, QRectF(area.left(), y, area.width(), area.height()), legend(),
                          t) +
       4;
  const SummaryLayout summary = summary_layout(QRectF(area.left(), y, area.width(), area.height()));
  const qreal rows_top = std::max(summary.text.bottom(), summary.marks.bottom()) + 4;
  paint_rows(painter, QRectF(area.left(), rows_top, area.width(), area.bottom() - rows_top));
  paint_summary(painter, summary);  // after the rows: it names the rows drawn
}

QString TimelinePanel::marks_key() { return tr("| arrival   \u25bc first token"); }

TimelinePanel::SummaryLayout TimelinePanel::summary_layout(const QRectF& area) const {
  // The summary's text is known once the rows are laid out: its room is kept for the text as
  // it reads now with a few characters to spare. The marks' key goes at its right, or under
  // it when both do not fit one line.
  const QFontMetricsF metrics(font());
  const qreal marks_width = metrics.horizontalAdvance(marks_key()) + 2;
  const QString estimate = queue_summary() + QStringLiteral("0000");
  const bool one_line = metrics.horizontalAdvance(estimate) + 12 + marks_width <= area.width();
  const qreal text_width = one_line ? area.width() - marks_width - 12 : area.width();
  const QRectF text(area.topLeft(), QSizeF(text_width, metrics.boundingRect(
                                                           QRectF(0, 0, text_width, area.height()),
                                                           Qt::TextWordWrap, estimate)
                                                           .height()));
  const QPointF marks_at = one_line ? QPointF(area.right() - marks_width, area.top())
                                    : QPointF(area.left(), text.bottom());
  return {text, QRectF(marks_at, QSizeF(marks_width, metrics.height()))};
}

void TimelinePanel::paint_summary(QPainter& painter, const SummaryLayout& layout) {
  const Theme& t = theme();
  painter.setPen(t.muted_text);
  painter.drawText(layout.marks, Qt::AlignLeft | Qt::AlignVCenter, marks_key());
  painter.setPen(t.text);
  painter.drawText(layout.text, Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, queue_summary());
  add_tooltip(layout.marks, tr("The line at a bar's start is the request's arrival; the "
                               "triangle is its first token (TTFT after the arrival)."));
  add_tooltip(layout.text,
              tr("Queue time: from arrival until the first step that ran any of its tokens. "
                 "Under static batching a request that arrives while a batch runs waits for "
                 "the whole batch (head-of-line blocking)."));
}

void TimelinePanel::paint_rows(QPainter& painter, const QRectF& area) {
  const Theme& t = theme();
  const QFontMetricsF small(chart::small_font(font()));
  const QFontMetricsF normal(font());
  const qreal min_row_height = std::max<qreal>(small.height() + 6, 14);
  const qreal axis_height = small.height() * 1.5 + 4 + normal.height() + 2;
  const qreal rows_room = area.height() - axis_height;
  const auto fit = static_cast<size_t>(std::max<qreal>(1, rows_room / min_row_height));
  first_shown_ = snapshot_.rows.size() > fit ? snapshot_.rows.size() - fit : 0;
  const size_t shown = snapshot_.rows.size() - first_shown_;
  // A few rows grow to fill the room, up to twice their height: bars, not ribbons.
  const qreal row_height =
      std::clamp(rows_room / double(shown), min_row_height, 2 * min_row_height);

  const auto [origin_ms, end_ms] = shown_time_span();
  qreal label_width = 0;
  for (size_t i = first_shown_; i < snapshot_.rows.size(); ++i) {
    const QString longest = row_label(snapshot_.rows[i].request, true);
    label_width = std::max(label_width, small.horizontalAdvance(longest));
  }
  label_width += 10;

  chart::AxesSpec spec;
  spec.x_label = tr("time since %1 arrived (ms)")
                     .arg(snapshot_.own_requests.name(snapshot_.rows[first_shown_].request));
  const chart::Range full{0.0, std::max(end_ms - origin_ms, 1e-3)};
  spec.x = x_window(chart_id(), full, full.span() / 200);
  spec.y = {0.0, double(shown)};
  spec.y_ticks = 0;
  spec.x_ticks = 8;
  const qreal plot_height = std::min(area.height(), double(shown) * row_height + axis_height);
  const chart::Frame frame = chart::draw_axes(
      painter, QRectF(area.left() + label_width, area.top(), area.width() - label_width, plot_height),
      spec, t);
  const QRectF& plot = frame.plot();
  const qreal band_height = plot.height() / double(shown);
  const chart::Frame engine_clock(
      plot, {frame.x_range().min + origin_ms, frame.x_range().max + origin_ms}, frame.y_range());
  painter.save();
  painter.setFont(chart::small_font(font()));
  for (size_t k = 0; k < shown; ++k) {
    const QRectF band(plot.left(), plot.top() + double(k) * band_height, plot.width(), band_height);
    const RequestLifeRow& row = snapshot_.rows[first_shown_ + k];
    paint_label(painter, row, QRectF(area.left(), band.top(), label_width - 6, band.height()),
                band.right());
    paint_row(painter, engine_clock, first_shown_ + k, band);
  }
  painter.restore();
  mark_zoomable(painter, chart_id(), plot);
}

std::pair<double, double> TimelinePanel::shown_time_span() const {
  double origin_ms = snapshot_.rows[first_shown_].arrival_ms;
  double end_ms = snapshot_.now_ms;
  for (size_t i = first_shown_; i < snapshot_.rows.size(); ++i) {
    const RequestLifeRow& row = snapshot_.rows[i];
    origin_ms = std::min(origin_ms, row.arrival_ms);
    if (!row.bars.empty()) end_ms = std::max(end_ms, row.bars.back().end_ms);
  }
  return {origin_ms, end_ms};
}

QString TimelinePanel::row_label(int64_t request, bool own) {
  return own ? tr("yours %1").arg(request) : QString::number(request);
}

void TimelinePanel::paint_label(QPainter& painter, const RequestLifeRow& row, const QRectF& label,
                                qreal row_right) {
  const Theme& t = theme();
  const bool own = snapshot_.own_requests.contains(row.request);
  if (own) {  // the user's row stands out from the classmates' in its own colour
    QColor wash = t.own_request;
    wash.setAlpha(40);
    painter.fillRect(QRectF(label.left(), label.top(), row_right - label.left(), label.height()),
                     wash);
  }
  painter.save();
  painter.setPen(own ? t.text : t.muted_text);  // the wash marks it: text keeps its contrast
  QFont bold = painter.font();
  bold.setBold(own);
  painter.setFont(bold);
  painter.drawText(label, Qt::AlignRight | Qt::AlignVCenter, row_label(row.request, own));
  painter.restore();
  add_tooltip(QRectF(label.left(), label.top(), row_right - label.left(), label.height()),
              row_text(row));
}

void TimelinePanel::paint_row(QPainter& painter, const chart::Frame& frame, size_t index,
                              const QRectF& band) {
  const Theme& t = theme();
  const RequestLifeRow& row = snapshot_.rows[index];
  const QRectF& plot = frame.plot();
  const qreal height = std::max<qreal>(4, band.height() * 0.7);
  const qreal top = band.center().y() - height / 2;
  std::vector<QRectF>& rects = bar_rects_.emplace_back();
  for (size_t j = 0; j < row.bars.size(); ++j) {
    const LifeBar& bar = row.bars[j];
    const qreal x0 = std::max(plot.left(), frame.x(bar.start_ms));
    const qreal x1 = std::min(plot.right(), std::max(frame.x(bar.end_ms), x0 + 1));
    if (x1 <= plot.left() || x0 >= plot.right()) {
      rects.emplace_back();
      continue;
    }
    const QRectF box(x0, top, x1 - x0, height);
    rects.push_back(box);
    const StageStyle style = stage_style(bar.stage, t);
    chart::fill_patterned(painter, box, style.colour, style.pattern, t.text);
    if (bar.stage == LifeStageView::kQueued) {
      painter.setPen(QPen(t.muted_text, 1));
      painter.setBrush(Qt::NoBrush);
      painter.drawRect(box);
      mark_element(QStringLiteral("queued"), box);
    }
    // A line between two chunks, so each chunk's size shows.
    if (j > 0 && row.bars[j - 1].stage == bar.stage && bar.stage != LifeStageView::kDecode) {
      painter.setPen(QPen(t.background, 1.5));
      painter.drawLine(QPointF(x0, top), QPointF(x0, top + height));
    }
    add_tooltip(box, bar_text(row, j));
  }
  painter.setPen(QPen(t.text, 2));
  const qreal arrival_x = frame.x(row.arrival_ms);
  if (arrival_x >= plot.left() && arrival_x <= plot.right()) {
    painter.drawLine(QPointF(arrival_x, band.top() + 1), QPointF(arrival_x, band.bottom() - 1));
  }
  const qreal token_x = frame.x(row.first_token_ms);
  if (row.first_token_ms >= 0.0 && token_x >= plot.left() && token_x <= plot.right()) {
    const qreal size = std::min<qreal>(band.height() * 0.45, 8);
    QPainterPath mark;
    mark.moveTo(token_x - size / 2, top - 1);
    mark.lineTo(token_x + size / 2, top - 1);
    mark.lineTo(token_x, top - 1 + size);
    mark.closeSubpath();
    painter.fillPath(mark, t.text);
    mark_element(QStringLiteral("first-token"), mark);
    add_tooltip(mark.boundingRect().adjusted(-2, -2, 2, 2),
                tr("First token of %1: TTFT %2 after it arrived.")
                    .arg(snapshot_.own_requests.name(row.request), ms_text(row.ttft_ms)));
  }
}

}  // namespace servescope::widgets
