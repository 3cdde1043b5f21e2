#include "widgets/batching_panel.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>
#include <set>

#include "widgets/label_layout.h"
#include "widgets/sweep_chart.h"
#include "widgets/panel_sections.h"
#include "widgets/theme.h"

namespace servescope::widgets {
namespace {

constexpr QSize kMinimumSize(560, 380);

constexpr qreal kMinCellWidth = 4.0;

// Lines of the panel's font each section needs to stay readable: a heading, the axes' tick
// labels and title, and a plot a few lines tall.
constexpr double kSlotsLines = 7.0;
constexpr double kOccupancyLines = 7.0;
constexpr double kLatencyLines = 6.0;
constexpr double kSweepLines = 10.0;
constexpr double kSweepNoteLines = 3.0;  // the "No sweep yet" message

Qt::BrushStyle state_pattern(SlotState state) {
  switch (state) {
    case SlotState::kPrefill:
      return Qt::BDiagPattern;
    case SlotState::kRecompute:
      return Qt::DiagCrossPattern;
    default:
      return Qt::SolidPattern;
  }
}

int occupied(const BatchStep& step) {
  return static_cast<int>(std::count_if(
      step.cells.begin(), step.cells.end(),
      [](const SlotCell& c) { return c.request >= 0 && c.state != SlotState::kEmpty; }));
}

}  // namespace

QString slot_state_name(SlotState state) {
  switch (state) {
    case SlotState::kPrefill:
      return QObject::tr("prefill");
    case SlotState::kDecode:
      return QObject::tr("decode");
    case SlotState::kRecompute:
      return QObject::tr("recompute");
    case SlotState::kEmpty:
      break;
  }
  return QObject::tr("empty");
}

QString tpot_explanation(const RequestLatency& r) {
  const QString tpot =
      QObject::tr("Request %1: TPOT %2 ms").arg(r.request).arg(chart::format_number(r.tpot_ms));
  if (r.tpot_steps <= 0) return tpot + QLatin1Char('.');
  return QObject::tr(
             "%1 = %2 ms mean step time of the %3 decode steps it rode + %4 ms between "
             "steps, per token.")
      .arg(tpot, chart::format_number(r.tpot_step_ms))
      .arg(r.tpot_steps)
      .arg(chart::format_number(r.tpot_gap_ms));
}

QString sweep_point_text(const SweepPoint& p) {
  QString text = QObject::tr("batch %1: %2 tokens/s = %3 tokens per step / %4 ms per step")
                     .arg(p.max_batch)
                     .arg(chart::format_number(p.tokens_per_s))
                     .arg(chart::format_number(p.tokens_per_step))
                     .arg(chart::format_number(p.step_latency_ms));
  if (p.slowest_step_ms > 0.0) {
    text +=
        QObject::tr(" (median run; all runs %1-%2 ms per step)")
            .arg(chart::format_number(p.fastest_step_ms), chart::format_number(p.slowest_step_ms));
  }
  return text;
}

QString sweep_summary(const std::vector<SweepPoint>& sweep) {
  if (sweep.empty()) return {};
  QString text = QObject::tr("The last sweep, each size's median run (bars: all its runs).");
  const auto one = std::ranges::find(sweep, int64_t{1}, &SweepPoint::max_batch);
  if (one == sweep.end() || one->tokens_per_s <= 0.0) return text;
  QStringList ratios;
  for (const SweepPoint& p : sweep) {
    if (p.max_batch == 1) continue;
    ratios << QStringLiteral("%1: %2x")
                  .arg(p.max_batch)
                  .arg(chart::format_number(p.tokens_per_s / one->tokens_per_s));
  }
  if (ratios.isEmpty()) return text;
  return text + QObject::tr(" Tokens/s against batch 1: %1").arg(ratios.join(QStringLiteral(", ")));
}

BatchingPanel::BatchingPanel(QWidget* parent) : PanelView(parent) {}

void BatchingPanel::set_snapshot(BatchingSnapshot snapshot) {
  snapshot_ = std::move(snapshot);
  first_shown_ = 0;  // every step, until a paint says how many fit
  update();
}

QSize BatchingPanel::minimumSizeHint() const { return kMinimumSize; }

QString BatchingPanel::title() const { return tr("Batching"); }

QString BatchingPanel::csv() const {
  QString out = QStringLiteral("step,slot,request,state\n");
  for (const BatchStep& step : snapshot_.steps) {
    for (int slot = 0; slot < snapshot_.slot_count; ++slot) {
      const SlotCell cell = slot < int(step.cells.size()) ? step.cells[size_t(slot)] : SlotCell{};
      const bool empty = cell.request < 0 || cell.state == SlotState::kEmpty;
      out += QStringLiteral("%1,%2,%3,%4\n")
                 .arg(step.index)
                 .arg(slot)
                 .arg(empty ? QString() : QString::number(cell.request),
                      slot_state_name(empty ? SlotState::kEmpty : cell.state));
    }
  }
  return out;
}

std::vector<double> BatchingPanel::occupancy() const {
  std::vector<double> values;
  for (const BatchStep& step : snapshot_.steps) {
    values.push_back(snapshot_.slot_count > 0 ? double(occupied(step)) / snapshot_.slot_count
                                              : 0.0);
  }
  return values;
}

double BatchingPanel::mean_occupancy() const {
  const std::vector<double> values = occupancy();
  const size_t first = first_shown_step();
  if (first >= values.size()) return 0.0;
  double sum = 0.0;
  for (size_t i = first; i < values.size(); ++i) sum += values[i];
  return sum / double(values.size() - first);
}

QString BatchingPanel::occupancy_heading() const {
  // The mean is of the steps the chart draws; when the width holds only the latest of them,
  // the heading says so (a wider window draws more steps and their mean differs).
  const size_t held = snapshot_.steps.size();
  const size_t shown = held - first_shown_step();
  if (shown < held) {
    return tr("Occupancy: mean %1% over the last %2 steps (of %3)")
        .arg(chart::format_number(100.0 * mean_occupancy(), 3))
        .arg(shown)
        .arg(held);
  }
  return tr("Occupancy: mean %1% over %2 steps")
      .arg(chart::format_number(100.0 * mean_occupancy(), 3))
      .arg(shown);
}

QString BatchingPanel::sweep_note() const {
  if (!snapshot_.sweep.empty()) return {};
  return tr(
      "No sweep yet: press Sweep (Ctrl+Shift+B) to measure throughput and step latency at "
      "several batch sizes.");
}

std::vector<chart::LegendEntry> BatchingPanel::legend(bool compact) const {
  const Theme& t = theme();
  // The requests of the steps the chart draws, so the legend names what is on screen.
  std::set<int64_t> requests;
  for (size_t i = first_shown_step(); i < snapshot_.steps.size(); ++i) {
    for (const SlotCell& c : snapshot_.steps[i].cells) {
      if (c.request >= 0 && c.state != SlotState::kEmpty) requests.insert(c.request);
    }
  }
  std::vector<chart::LegendEntry> entries = snapshot_.own_requests.legend(requests, t, compact);
  entries.push_back({tr("prefill (hatched)"), t.muted_text, Qt::BDiagPattern});
  entries.push_back({tr("decode (solid)"), t.muted_text});
  entries.push_back({compact ? tr("recompute (cross-hatched)")
                             : tr("recompute after preemption (cross-hatched)"),
                     t.muted_text, Qt::DiagCrossPattern});
  entries.push_back({compact ? tr("empty") : tr("empty slot"), t.surface});
  return entries;
}

QStringList BatchingPanel::legend_labels() const {
  QStringList labels;
  for (const chart::LegendEntry& e : legend()) labels << e.label;
  return labels;
}

std::optional<QRectF> BatchingPanel::cell_rect(int64_t step_index, int slot) const {
  const QRectF& plot = heatmap_.plot();
  if (plot.isEmpty() || slot < 0 || slot >= snapshot_.slot_count) return {};
  // Only the steps the window shows (zoomed in, the end ones in part).
  const chart::Range& shown = heatmap_.x_range();
  if (double(step_index) + 0.5 <= shown.min || double(step_index) - 0.5 >= shown.max) return {};
  const qreal row = plot.height() / snapshot_.slot_count;
  const qreal x0 = heatmap_.x(double(step_index) - 0.5);
  return QRectF(x0, plot.top() + slot * row, heatmap_.x(double(step_index) + 0.5) - x0, row);
}

std::optional<BatchingPanel::CellId> BatchingPanel::cell_at(QPointF pos) const {
  const QRectF& plot = heatmap_.plot();
  if (plot.isEmpty() || !plot.contains(pos) || snapshot_.slot_count <= 0) return {};
  const chart::Range& x = heatmap_.x_range();
  const double index = x.min + (pos.x() - plot.left()) / plot.width() * x.span() + 0.5;
  const int slot = std::min(int((pos.y() - plot.top()) / plot.height() * snapshot_.slot_count),
                            snapshot_.slot_count - 1);
  return CellId{int64_t(std::floor(index)), slot};
}

QString BatchingPanel::cell_tooltip(QPointF pos) const {
  const std::optional<CellId> id = cell_at(pos);
  if (!id) return {};
  const auto step =
      std::lower_bound(snapshot_.steps.begin(), snapshot_.steps.end(), id->step_index,
                       [](const BatchStep& s, int64_t index) { return s.index < index; });
  if (step == snapshot_.steps.end() || step->index != id->step_index) return {};
  const SlotCell c =
      id->slot < int(step->cells.size()) ? step->cells[size_t(id->slot)] : SlotCell{};
  if (c.request < 0 || c.state == SlotState::kEmpty) {
    return tr("Step %1, slot %2: empty, a batch place no request used.")
        .arg(step->index)
        .arg(id->slot);
  }
  return tr("Step %1, slot %2: %3, %4.")
      .arg(step->index)
      .arg(id->slot)
      .arg(snapshot_.own_requests.name(c.request), slot_state_name(c.state));
}

void BatchingPanel::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.setRenderHint(QPainter::Antialiasing);
  painter.setFont(font());
  clear_tooltips();
  heatmap_ = {};
  sweep_dots_.clear();
  const bool no_live_steps = snapshot_.steps.empty() || snapshot_.slot_count <= 0;
  if (no_live_steps && !snapshot_.sweep.empty()) {
    paint_sweep_alone(painter);
    return;
  }
  if (no_live_steps) {
    paint_empty_state(
        painter,
        snapshot_.collecting.isEmpty()
            ? tr("No batches yet: press Generate (and add classmates) to see slots fill.")
            : tr("%1: %2. No step has run yet.").arg(snapshot_.policy, snapshot_.collecting));
    return;
  }
  if (paint_if_too_small(painter, kMinimumSize)) return;
  const Theme& t = theme();
  painter.fillRect(rect(), t.background);
  const QRectF area = QRectF(rect()).adjusted(12, 8, -12, -8);
  qreal y = area.top();
  y += chart::draw_heading(
      painter, area,
      tr("Batching: %1 slots, %2")
          .arg(snapshot_.slot_count)
          .arg(snapshot_.policy.isEmpty() ? tr("continuous batching") : snapshot_.policy),
      t);
  add_tooltip(QRectF(area.left(), area.top(), area.width(), y - area.top()),
              tr("Slots are the places in one batch: how many requests one step can serve."));
  y += paint_pacing_note(painter, QRectF(area.left(), y, area.width(), area.height()),
                         snapshot_.pacing_note);
  if (!snapshot_.collecting.isEmpty()) {
    const qreal top = y;
    painter.save();
    painter.setPen(t.warning);
    const qreal height = QFontMetricsF(painter.font()).height();
    painter.drawText(
        QRectF(area.left(), y, area.width(), height), Qt::AlignLeft | Qt::AlignVCenter,
        tr("Now %1 (it starts when full or when the wait ends)").arg(snapshot_.collecting));
    painter.restore();
    y += height + 4;
    add_tooltip(QRectF(area.left(), top, area.width(), y - top),
                tr("Measured by the engine: the requests waiting now, the batch's places, and "
                   "when the oldest request's wait ends."));
  }
  // In a projector's room the legend's words are short, so it takes one line.
  const qreal line = QFontMetricsF(font()).lineSpacing();
  const bool compact = area.height() / line < kLinesForExplanations;
  y += chart::draw_legend(painter, QRectF(area.left(), y, area.width(), area.height()),
                          legend(compact), t) +
       6;

  // What fits: each column keeps what the lesson highlights and then the most important; a
  // note says what is hidden, and the choice is remade with the note's line taken.
  const double body_lines = (area.bottom() - y) / line;
  Layout layout = layout_for(body_lines);
  for (int i = 0; i < 2 && !layout.hidden.isEmpty(); ++i)
    layout = layout_for(body_lines -
                        hidden_sections_note_lines(font(), area.width(), layout.hidden));
  y += draw_hidden_sections_note(painter, QRectF(area.left(), y, area.width(), area.height()),
                                 layout.hidden, t);

  const QRectF body(area.left(), y, area.width(), std::max<qreal>(area.bottom() - y, 0));
  // The latency table is narrow; the sweep's two charts want half the width.
  const qreal split = body.width() * (layout.right.contains(QStringLiteral("latencies")) ? 0.58
                                                                                         : 0.5);
  const QRectF slot_area(body.left(), body.top(), split - 12, body.height());
  paint_heatmap_and_occupancy(painter, slot_area,
                              layout.left.contains(QStringLiteral("occupancy")));
  mark_element(QStringLiteral("slots"), slot_area);
  const QRectF right(body.left() + split + 12, body.top(), body.width() - split - 12,
                     body.height());
  const bool both = layout.right.size() == 2;
  const QRectF upper(right.left(), right.top(), right.width(),
                     both ? right.height() * 0.5 - 8 : right.height());
  const QRectF lower(right.left(), right.top() + right.height() * 0.5, right.width(),
                     right.height() * 0.5);
  for (const QString& section : layout.right) {
    const QRectF box = section == layout.right.front() ? upper : lower;
    if (section == QStringLiteral("latencies"))
      paint_latencies(painter, box);
    else
      paint_sweep(painter, box);
    mark_element(section, box);
  }
}

BatchingPanel::Layout BatchingPanel::layout_for(double body_lines) const {
  const QString highlighted = highlight();
  Layout layout;
  layout.left = sections_that_fit({{QStringLiteral("slots"), kSlotsLines},
                                   {QStringLiteral("occupancy"), kOccupancyLines}},
                                  body_lines, highlighted);
  layout.right = sections_that_fit(
      {{QStringLiteral("latencies"), kLatencyLines},
       {QStringLiteral("sweep"), snapshot_.sweep.empty() ? kSweepNoteLines : kSweepLines}},
      body_lines, highlighted);
  if (!layout.left.contains(QStringLiteral("occupancy"))) layout.hidden << tr("occupancy chart");
  if (!layout.right.contains(QStringLiteral("latencies"))) layout.hidden << tr("latency table");
  if (!layout.right.contains(QStringLiteral("sweep"))) layout.hidden << tr("batch-size sweep");
  return layout;
}

void BatchingPanel::paint_heatmap_and_occupancy(QPainter& painter, const QRectF& area,
                                                bool with_occupancy) {
  const Theme& t = theme();
  // The steps drawn: the newest that fit at kMinCellWidth each.
  const qreal rough_width = std::max<qreal>(area.width() - 60, 1);
  const size_t max_visible = std::max<size_t>(1, size_t(rough_width / kMinCellWidth));
  first_shown_ =
      snapshot_.steps.size() > max_visible ? snapshot_.steps.size() - max_visible : 0;
  const int64_t first_index = snapshot_.steps[first_shown_].index;
  const int64_t last_index = snapshot_.steps.back().index;
  chart::AxesSpec spec;
  spec.x_label = tr("engine step");
  // The slots and the occupancy under them share the step axis, and so its zoom.
  spec.x = x_window(QStringLiteral("slots"),
                    {double(first_index) - 0.5, double(last_index) + 0.5}, 4.0);
  spec.integer_x = true;
  spec.x_ticks = 8;

  // Without the occupancy chart its mean joins the heading, so the figure stays on screen.
  const QString heading =
      with_occupancy ? tr("Slots over steps")
                     : tr("Slots over steps: %1% in use on average")
                           .arg(chart::format_number(100.0 * mean_occupancy(), 3));
  const qreal top = area.top() + chart::draw_heading(painter, area, heading, t);
  if (!with_occupancy)
    add_tooltip(QRectF(area.left(), area.top(), area.width(), top - area.top()),
                snapshot_.help.occupancy);
  painter.setFont(chart::small_font(font()));
  const qreal label_width =
      QFontMetricsF(painter.font()).horizontalAdvance(tr("slot %1").arg(snapshot_.slot_count)) + 8;
  painter.setFont(font());
  QRectF heat;
  if (with_occupancy) {
    // The occupancy chart gets its readable height at least: its heading may wrap.
    const qreal heat_height =
        std::min((area.bottom() - top) * 0.62,
                 area.bottom() - top - kOccupancyLines * QFontMetricsF(font()).lineSpacing());
    const chart::Frame occ_frame =
        paint_occupancy(painter, QRectF(area.left(), top + heat_height + 8, area.width(),
                                        area.bottom() - top - heat_height - 8),
                        spec);
    heat = QRectF(occ_frame.plot().left(), top, occ_frame.plot().width(), heat_height);
  } else {
    // The heatmap carries the step axis itself, its slot labels left of it.
    spec.y = {0.0, double(snapshot_.slot_count)};
    spec.y_ticks = 0;
    heat = chart::draw_axes(painter,
                            QRectF(area.left() + label_width, top, area.width() - label_width,
                                   area.bottom() - top),
                            spec, t)
               .plot();
  }
  heatmap_ = chart::Frame(heat, spec.x, {0.0, double(snapshot_.slot_count)});
  painter.fillRect(heat, t.surface);
  painter.save();
  painter.setClipRect(heat);  // zoomed in, the end steps are cut by the plot's edges
  const qreal row = heat.height() / snapshot_.slot_count;
  const qreal gap = row > 10 ? 1.5 : 0.0;
  painter.setRenderHint(QPainter::Antialiasing, false);  // seamless columns
  // Where a slot passes to another request, a gap in the background's colour marks the
  // hand-over (two classmates may share a tone).
  std::vector<int64_t> previous(size_t(snapshot_.slot_count), -1);
  const qreal hand_over = std::min<qreal>(2.0, heat.width() / 200.0);
  for (size_t i = first_shown_; i < snapshot_.steps.size(); ++i) {
    const BatchStep& step = snapshot_.steps[i];
    for (int slot = 0; slot < snapshot_.slot_count && slot < int(step.cells.size()); ++slot) {
      const SlotCell& c = step.cells[size_t(slot)];
      const bool held = c.request >= 0 && c.state != SlotState::kEmpty;
      const int64_t before = std::exchange(previous[size_t(slot)], held ? c.request : -1);
      const std::optional<QRectF> shown = held ? cell_rect(step.index, slot) : std::nullopt;
      if (!shown) continue;
      const QRectF cell = *shown;
      const qreal left = before >= 0 && before != c.request ? hand_over : 0.0;
      chart::fill_patterned(painter, cell.adjusted(left, gap, 0, -gap),
                            snapshot_.own_requests.colour(c.request, t), state_pattern(c.state),
                            t.background);
    }
  }
  painter.restore();
  mark_zoomable(painter, QStringLiteral("slots"), heat);
  add_tooltip([this](QPointF pos) -> std::optional<HoverHit> {
    const std::optional<CellId> id = cell_at(pos);
    if (!id) return std::nullopt;
    const std::optional<QRectF> cell = cell_rect(id->step_index, id->slot);
    return HoverHit{cell_tooltip(pos), cell ? cell->intersected(heatmap_.plot()) : QRectF()};
  });
  // Slot labels, thinned out when rows are shorter than a line of text.
  painter.setFont(chart::small_font(font()));
  const QFontMetricsF small(painter.font());
  const int every = std::max(1, int(std::ceil(small.height() / std::max<qreal>(row, 1e-3))));
  painter.setPen(t.muted_text);
  for (const RowLabel& label :
       row_labels(snapshot_.slot_count, every, heat.top(), row, small.height())) {
    painter.drawText(QRectF(area.left(), label.centre - small.height() / 2,
                            heat.left() - area.left() - 4, small.height()),
                     Qt::AlignRight | Qt::AlignVCenter, tr("slot %1").arg(label.row));
  }
  painter.setFont(font());
}

chart::Frame BatchingPanel::paint_occupancy(QPainter& painter, const QRectF& area,
                                            chart::AxesSpec spec) {
  const Theme& t = theme();
  const std::vector<double> occ = occupancy();
  const qreal heading = chart::draw_heading(painter, area, occupancy_heading(), t);
  add_tooltip(QRectF(area.left(), area.top(), area.width(), heading), snapshot_.help.occupancy);
  spec.y_label = tr("in use (%)");
  spec.y = {0.0, 100.0};
  spec.y_ticks = 2;
  const chart::Frame frame = chart::draw_axes(
      painter, QRectF(area.left(), area.top() + heading, area.width(), area.height() - heading),
      spec, t);
  // A step function: each engine step holds its occupancy over its whole column.
  QPainterPath line;
  QPainterPath fill(frame.point(spec.x.min, 0));
  for (size_t i = first_shown_; i < snapshot_.steps.size(); ++i) {
    const double index = double(snapshot_.steps[i].index);
    const QPointF left = frame.point(index - 0.5, 100.0 * occ[i]);
    const QPointF right = frame.point(index + 0.5, 100.0 * occ[i]);
    if (i == first_shown_)
      line.moveTo(left);
    else
      line.lineTo(left);
    line.lineTo(right);
    fill.lineTo(left);
    fill.lineTo(right);
  }
  fill.lineTo(frame.point(spec.x.max, 0));
  QColor area_color = t.text;
  area_color.setAlphaF(0.12f);
  painter.save();
  painter.setClipRect(frame.plot().adjusted(0, -2, 0, 2));  // zoomed in, the line runs past
  painter.fillPath(fill, area_color);
  painter.setPen(QPen(t.text, 1.8));
  painter.setBrush(Qt::NoBrush);
  painter.drawPath(line);
  painter.restore();
  mark_zoomable(painter, QStringLiteral("slots"), frame.plot());
  add_tooltip(frame.plot(),
              with_definition(tr("Empty slots are throughput the device could have had."),
                              snapshot_.help.occupancy));
  return frame;
}

std::vector<size_t> BatchingPanel::latency_rows(size_t lines) const {
  // The newest requests that fit, less a line for "N earlier" when some are left out; the
  // user's latest request keeps its row (the oldest one shown gives way), so "your request"
  // of the legend is always in the table.
  const size_t count = snapshot_.requests.size();
  const size_t rows = count > lines ? lines - 1 : count;
  std::vector<size_t> shown;
  for (size_t i = count - rows; i < count; ++i) shown.push_back(i);
  for (size_t i = count; i-- > 0 && !shown.empty();) {
    if (!snapshot_.own_requests.contains(snapshot_.requests[i].request)) continue;
    if (i < shown.front()) shown.front() = i;
    break;
  }
  return shown;
}

void BatchingPanel::paint_latencies(QPainter& painter, const QRectF& area) {
  const Theme& t = theme();
  qreal top =
      area.top() + chart::draw_heading(painter, area, tr("Latency per request (TTFT, TPOT)"), t);
  if (snapshot_.requests.empty()) {
    chart::draw_note(painter, QRectF(area.left(), top, area.width(), area.bottom() - top),
                     tr("No requests yet."), t);
    return;
  }
  painter.setFont(chart::small_font(font()));
  const QFontMetricsF metrics(painter.font());
  const qreal line = metrics.height() + 3;
  QFont bold = painter.font();
  bold.setBold(true);
  int64_t widest_id = 999;
  for (const RequestLatency& r : snapshot_.requests) widest_id = std::max(widest_id, r.request);
  const qreal label_width =
      QFontMetricsF(bold).horizontalAdvance(tr("request %1").arg(widest_id)) + 6;
  const qreal value_width = metrics.horizontalAdvance(QStringLiteral("00000 ms")) + 6;
  const qreal column = (area.width() - label_width) / 2;
  const qreal bar_max = std::max<qreal>(column - value_width - 8, 4);

  painter.setPen(t.text);
  painter.drawText(QRectF(area.left() + label_width, top, column, line),
                   Qt::AlignLeft | Qt::AlignVCenter, tr("TTFT (ms)"));
  painter.drawText(QRectF(area.left() + label_width + column, top, column, line),
                   Qt::AlignLeft | Qt::AlignVCenter, tr("TPOT (ms)"));
  add_tooltip(QRectF(area.left() + label_width, top, column, line), snapshot_.help.ttft);
  add_tooltip(QRectF(area.left() + label_width + column, top, column, line), snapshot_.help.tpot);
  top += line + 2;

  const size_t fit = std::max<size_t>(1, size_t(std::max<qreal>(area.bottom() - top, 0) / line));
  const std::vector<size_t> rows = latency_rows(fit);
  double max_ttft = 1e-9, max_tpot = 1e-9;
  for (const RequestLatency& r : snapshot_.requests) {
    max_ttft = std::max(max_ttft, r.ttft_ms);
    max_tpot = std::max(max_tpot, r.tpot_ms);
  }
  if (const size_t hidden = snapshot_.requests.size() - rows.size(); hidden > 0) {
    painter.setPen(t.muted_text);
    const QString earlier = tr("%1 earlier requests in the CSV export").arg(hidden);
    painter.drawText(QRectF(area.left(), top, area.width(), line), Qt::AlignLeft | Qt::AlignVCenter,
                     metrics.horizontalAdvance(earlier) <= area.width()
                         ? earlier
                         : tr("%1 earlier in the CSV").arg(hidden));
    top += line;
  }
  for (size_t i : rows) {
    const RequestLatency& r = snapshot_.requests[i];
    const OwnRequests& own = snapshot_.own_requests;
    const QColor color = own.colour(r.request, t);
    painter.setPen(t.text);
    // The user's own row in bold: its bar has the colour the legend names "your request".
    painter.save();
    if (own.contains(r.request)) painter.setFont(bold);
    painter.drawText(QRectF(area.left(), top, label_width, line), Qt::AlignLeft | Qt::AlignVCenter,
                     tr("request %1").arg(r.request));
    painter.restore();
    const std::pair<double, double> values[] = {{r.ttft_ms, max_ttft}, {r.tpot_ms, max_tpot}};
    for (int k = 0; k < 2; ++k) {
      const qreal x = area.left() + label_width + k * column;
      const double value = values[k].first;
      painter.setPen(t.muted_text);
      if (value <= 0.0) {
        painter.drawText(QRectF(x, top, column, line), Qt::AlignLeft | Qt::AlignVCenter,
                         tr("not yet"));
        continue;
      }
      const qreal w = std::max<qreal>(bar_max * value / values[k].second, 2);
      painter.fillRect(QRectF(x, top + 2, w, line - 4), color);
      painter.setPen(t.text);
      painter.drawText(QRectF(x + w + 4, top, value_width, line), Qt::AlignLeft | Qt::AlignVCenter,
                       tr("%1 ms").arg(chart::format_number(value)));
      if (k == 1) add_tooltip(QRectF(x, top, column, line), tpot_explanation(r));
    }
    top += line;
  }
  painter.setFont(font());
}

// The sweep runs on engines of its own, so it can come before the live engine ran a batch:
// then the sweep takes the whole panel and a line says where the slots will appear.
void BatchingPanel::paint_sweep_alone(QPainter& painter) {
  if (paint_if_too_small(painter, kMinimumSize)) return;
  const Theme& t = theme();
  painter.fillRect(rect(), t.background);
  const QRectF area = QRectF(rect()).adjusted(12, 8, -12, -8);
  qreal y = area.top();
  y += chart::draw_heading(painter, area, tr("Batching"), t);
  const qreal line = QFontMetricsF(painter.font()).height() * 1.4;
  chart::draw_note(
      painter, QRectF(area.left(), y, area.width(), line),
      tr("No live batches yet: press Generate (and add classmates) to see slots fill."), t);
  y += line + 6;
  const QRectF sweep(area.left(), y, area.width(), std::max<qreal>(area.bottom() - y, 0));
  paint_sweep(painter, sweep);
  mark_element(QStringLiteral("sweep"), sweep);
}

void BatchingPanel::paint_sweep(QPainter& painter, const QRectF& area) {
  const Theme& t = theme();
  qreal top = area.top() + chart::draw_heading(painter, area, tr("Batch-size sweep"), t);
  if (snapshot_.sweep.empty()) {
    chart::draw_note(painter, QRectF(area.left(), top, area.width(), area.bottom() - top),
                     sweep_note(), t);
    return;
  }
  const QString summary = sweep_summary(snapshot_.sweep);
  const QFontMetricsF metrics(painter.font());
  const qreal summary_height =
      metrics.boundingRect(QRectF(0, 0, area.width(), area.height()), Qt::TextWordWrap, summary)
          .height();
  // The summary only where the charts keep their readable height; its tooltip has it too.
  if (area.bottom() - top - summary_height >= (kSweepLines - 1.5) * metrics.lineSpacing()) {
    painter.save();
    painter.setPen(t.muted_text);
    painter.drawText(QRectF(area.left(), top, area.width(), summary_height),
                     Qt::AlignLeft | Qt::TextWordWrap, summary);
    painter.restore();
    top += summary_height + 4;
  }
  const QRectF body(area.left(), top, area.width(), std::max<qreal>(area.bottom() - top, 0));
  const qreal half = body.width() / 2;
  const QRectF left(body.left(), body.top(), half - 8, body.height());
  const QRectF right(body.left() + half + 8, body.top(), half - 8, body.height());
  sweep_dots_ = paint_sweep_chart(painter, left, snapshot_.sweep, &SweepPoint::tokens_per_s,
                                  tr("throughput"), tr("tokens/s"), t.decode, t);
  const std::vector<QPointF> latency_dots =
      paint_sweep_chart(painter, right, snapshot_.sweep, &SweepPoint::step_latency_ms,
                        tr("its latency cost"), tr("step time (ms)"), t.prefill, t, true);
  QStringList points;
  for (const SweepPoint& p : snapshot_.sweep) points << sweep_point_text(p);
  QString measured = summary + QLatin1Char('\n');
  if (!snapshot_.sweep_workload.isEmpty()) {
    measured += tr("Each size served %1.").arg(snapshot_.sweep_workload) + QLatin1Char('\n');
  }
  measured += tr("Step times move with whatever else the machine runs: compare batch 1 with a "
                 "live request measured in the same minute, not earlier.\n");
  measured += tr("Measured on the decode steps of each size's run:\n%1")
                  .arg(points.join(QLatin1Char('\n')));
  add_tooltip(left, with_definition(tr("Decode tokens per second with this many sequences "
                                       "decoding together."),
                                    snapshot_.help.throughput) +
                        QLatin1Char('\n') + measured);
  add_tooltip(right, with_definition(tr("The mean decode step time at this batch size."),
                                     snapshot_.help.step_time) +
                         QLatin1Char('\n') + measured);
  // A dot's own figures, over the charts' explanations.
  std::vector<std::pair<QPointF, QString>> values;
  for (size_t i = 0; i < snapshot_.sweep.size(); ++i) {
    const QString text = sweep_point_text(snapshot_.sweep[i]);
    values.emplace_back(sweep_dots_[i], text);
    values.emplace_back(latency_dots[i], text);
  }
  add_point_tooltips(std::move(values));
}

}  // namespace servescope::widgets
