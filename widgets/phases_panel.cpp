#include "widgets/phases_panel.h"

#include <QFontMetricsF>
#include <QPainter>
#include <algorithm>
#include <array>
#include <numeric>

#include "widgets/panel_sections.h"
#include "widgets/theme.h"

namespace servescope::widgets {
namespace {

constexpr QSize kMinimumSize(520, 360);

struct KernelClass {
  const char* name;
  double StepBar::*ms;
  int series;  // Okabe-Ito index; none of them is the prefill blue or the decode orange
};
constexpr std::array<KernelClass, 4> kKernels = {{
    {"matmul", &StepBar::matmul_ms, 2},        // bluish green
    {"attention", &StepBar::attention_ms, 5},  // vermillion
    {"norm", &StepBar::norm_ms, 6},            // reddish purple
    {"other", &StepBar::other_ms, -1},         // neutral: the muted text grey
}};

QColor kernel_color(const KernelClass& k, const Theme& t) {
  return k.series < 0 ? t.muted_text : t.series(k.series);
}

QColor phase_color(StepPhase phase, const Theme& t) {
  return phase == StepPhase::kDecode ? t.decode : t.prefill;
}

// Lines of the panel's font each part needs to stay readable: the time line's heading, two
// lanes and its axis; the decode chart's heading, legend, axes and a few lines of plot.
constexpr double kTimelineLines = 6.5;
constexpr double kDecodeRowLines = 8.0;

double duration(const StepBar& s) { return std::max(0.0, s.end_ms - s.start_ms); }

QString step_tooltip(const StepBar& s) {
  QString text = QObject::tr(
                     "Step %1: %2 prompt tokens prefilled, %3 tokens decoded, %4 sequences, "
                     "%5 ms, context up to %6 tokens.")
                     .arg(s.index)
                     .arg(s.prefill_tokens)
                     .arg(s.decode_tokens)
                     .arg(s.sequences)
                     .arg(chart::format_number(duration(s)))
                     .arg(s.context_tokens);
  if (s.kernels_measured) {
    text += QObject::tr(" Kernels: matmul %1 ms, attention %2 ms, norm %3 ms, other %4 ms.")
                .arg(chart::format_number(s.matmul_ms), chart::format_number(s.attention_ms),
                     chart::format_number(s.norm_ms), chart::format_number(s.other_ms));
  }
  return text;
}

// Draws `text` wrapped at the top of `box` when all of it fits there, moving `y` below it;
// returns false when it does not fit (and draws nothing: the tooltips carry these texts).
bool draw_if_it_fits(QPainter& painter, const QRectF& box, const QString& text, qreal& y) {
  const int flags = Qt::AlignLeft | Qt::TextWordWrap;
  const QRectF used = painter.boundingRect(QRectF(box.left(), box.top(), box.width(), 0), flags,
                                           text);
  if (used.height() > box.height()) return false;
  painter.drawText(box, flags, text);
  y = box.top() + used.height() + 4;
  return true;
}

}  // namespace

StepPhase phase_of(const StepBar& step) {
  if (step.prefill_tokens > 0 && step.decode_tokens > 0) return StepPhase::kMixed;
  if (step.prefill_tokens > 0) return StepPhase::kPrefill;
  if (step.decode_tokens > 0) return StepPhase::kDecode;
  return StepPhase::kIdle;
}

PhasesPanel::PhasesPanel(QWidget* parent) : PanelView(parent) {}

void PhasesPanel::set_snapshot(PhasesSnapshot snapshot) {
  snapshot_ = std::move(snapshot);
  update();
}

QSize PhasesPanel::minimumSizeHint() const { return kMinimumSize; }

QString PhasesPanel::title() const { return tr("Phases"); }

QString PhasesPanel::csv() const {
  QString out = QStringLiteral(
      "step,start_ms,end_ms,duration_ms,phase,prefill_tokens,decode_tokens,sequences,"
      "context_tokens,kernels_measured,matmul_ms,attention_ms,norm_ms,other_ms\n");
  static const char* const kPhaseNames[] = {"prefill", "decode", "mixed", "idle"};
  for (const StepBar& s : snapshot_.steps) {
    const bool k = s.kernels_measured;
    auto kernel = [k](double ms) { return k ? QString::number(ms, 'g', 9) : QString(); };
    out += QStringLiteral("%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14\n")
               .arg(s.index)
               .arg(QString::number(s.start_ms, 'g', 12), QString::number(s.end_ms, 'g', 12),
                    QString::number(duration(s), 'g', 9),
                    QLatin1String(kPhaseNames[static_cast<int>(phase_of(s))]))
               .arg(s.prefill_tokens)
               .arg(s.decode_tokens)
               .arg(s.sequences)
               .arg(s.context_tokens)
               .arg(k ? QStringLiteral("true") : QStringLiteral("false"))
               .arg(kernel(s.matmul_ms), kernel(s.attention_ms), kernel(s.norm_ms),
                    kernel(s.other_ms));
  }
  return out;
}

int PhasesPanel::step_count(StepPhase phase) const {
  return static_cast<int>(
      std::count_if(snapshot_.steps.begin(), snapshot_.steps.end(),
                    [phase](const StepBar& s) { return phase_of(s) == phase; }));
}

bool PhasesPanel::kernels_measured() const {
  return std::any_of(snapshot_.steps.begin(), snapshot_.steps.end(),
                     [](const StepBar& s) { return s.kernels_measured; });
}

QString PhasesPanel::kernel_note() const {
  if (snapshot_.steps.empty() || kernels_measured()) return {};
  return tr("kernel times not measured on this device");
}

std::vector<chart::LegendEntry> PhasesPanel::legend(bool explained) const {
  const Theme& t = theme();
  std::vector<chart::LegendEntry> entries;
  if (step_count(StepPhase::kPrefill) > 0 || step_count(StepPhase::kMixed) > 0) {
    entries.push_back(
        {explained ? tr("prefill step (many prompt tokens)") : tr("prefill step"), t.prefill});
  }
  if (step_count(StepPhase::kDecode) > 0 || step_count(StepPhase::kMixed) > 0) {
    entries.push_back(
        {explained ? tr("decode step (one token per sequence)") : tr("decode step"), t.decode});
  }
  if (step_count(StepPhase::kMixed) > 0) {
    entries.push_back({explained ? tr("mixed step (prefill above, decode below)")
                                 : tr("mixed step"),
                       t.prefill, Qt::SolidPattern, false, t.decode});
  }
  if (kernels_measured()) {
    for (const KernelClass& k : kKernels)
      entries.push_back({QString::fromLatin1(k.name), kernel_color(k, t)});
  }
  return entries;
}

QStringList PhasesPanel::legend_labels() const {
  QStringList labels;
  for (const chart::LegendEntry& e : legend(true)) labels << e.label;
  return labels;
}

chart::Range PhasesPanel::time_axis_ms() const {
  if (snapshot_.steps.empty()) return {0.0, 1.0};
  const double first = snapshot_.steps.front().start_ms;
  double last = first;
  for (const StepBar& s : snapshot_.steps) last = std::max(last, s.end_ms);
  return chart::nice_range(0.0, last - first, 8);
}

std::vector<QPointF> PhasesPanel::decode_points() const {
  std::vector<QPointF> points;
  for (const StepBar& s : snapshot_.steps) {
    if (phase_of(s) == StepPhase::kDecode)
      points.emplace_back(double(s.context_tokens), duration(s));
  }
  return points;
}

QStringList PhasesPanel::throughput_labels() const {
  // No rate is not a rate of 0: with classmates decoding, every prompt may share its step
  // with their decodes, and mixed steps are neither phase's measure.
  // The tooltip says why (no step of that phase alone yet); the label fits the column.
  const auto label = [this](const QString& phase, double rate) {
    return rate > 0.0 ? tr("%1: %2 tokens/s").arg(phase, chart::format_number(rate))
                      : tr("%1: not measured yet").arg(phase);
  };
  return {label(tr("Prefill"), snapshot_.prefill_tokens_per_s),
          label(tr("Decode"), snapshot_.decode_tokens_per_s)};
}

std::optional<size_t> PhasesPanel::step_at(QPointF pos) const {
  const QRectF& plot = timeline_.plot();
  if (plot.isEmpty() || !timeline_lanes_.contains(pos) || snapshot_.steps.empty()) return {};
  // Steps are ordered by start; a tick drawn 1.5 px wide is found within that width.
  const double ms_per_px = timeline_.x_range().span() / plot.width();
  const double at = timeline_.x_range().min + (pos.x() - plot.left()) * ms_per_px +
                    snapshot_.steps.front().start_ms;
  const double slack = 1.5 * ms_per_px;
  auto it = std::upper_bound(snapshot_.steps.begin(), snapshot_.steps.end(), at + slack,
                             [](double t, const StepBar& s) { return t < s.start_ms; });
  if (it == snapshot_.steps.begin()) return {};
  --it;  // the last step starting before the point: it covers it, or the point is in a gap
  if (it->end_ms + slack < at || phase_of(*it) == StepPhase::kIdle) return {};
  return size_t(it - snapshot_.steps.begin());
}

void PhasesPanel::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  timeline_ = {};
  timeline_lanes_ = {};
  painter.setRenderHint(QPainter::Antialiasing);
  painter.setFont(font());
  clear_tooltips();
  if (snapshot_.steps.empty()) {
    paint_empty_state(painter, tr("No steps yet: press Generate to see prefill and decode."));
    return;
  }
  if (paint_if_too_small(painter, kMinimumSize)) return;
  const Theme& t = theme();
  painter.fillRect(rect(), t.background);
  const QRectF area = QRectF(rect()).adjusted(12, 8, -12, -8);
  qreal y = area.top();
  y += chart::draw_heading(painter, area, tr("Phases: prefill and decode steps, measured"), t);
  add_tooltip(QRectF(area.left(), area.top(), area.width(), y - area.top()),
              tr("Prefill processes a prompt's tokens together; decode then makes one token per "
                 "sequence per step. Every duration here was measured."));
  y += paint_pacing_note(painter, QRectF(area.left(), y, area.width(), area.height()),
                         snapshot_.pacing_note);
  const qreal line = QFontMetricsF(font()).lineSpacing();
  y += chart::draw_legend(painter, QRectF(area.left(), y, area.width(), area.height()),
                          legend(area.height() / line >= kLinesForExplanations), t) +
       6;

  // The time line over the decode chart and throughput; in too little room the part the
  // lesson points at stays and a note names the other.
  const auto fit = [this](double lines) {
    const QString highlighted =
        highlight() == QStringLiteral("decode-time") ? highlight() : QStringLiteral("timeline");
    return sections_that_fit({{QStringLiteral("timeline"), kTimelineLines},
                              {QStringLiteral("decode-time"), kDecodeRowLines}},
                             lines, highlight().isEmpty() ? QString() : highlighted);
  };
  QStringList shown = fit((area.bottom() - y) / line);
  QStringList hidden;
  if (shown.size() < 2) {
    // One of the two is hidden either way; the note's lines decide which.
    const QStringList longest_note = {tr("decode time chart"), tr("throughput")};
    shown = fit((area.bottom() - y) / line -
                hidden_sections_note_lines(font(), area.width(), longest_note));
    if (shown.contains(QStringLiteral("timeline")))
      hidden = longest_note;
    else
      hidden << tr("steps over time");
  }
  y += draw_hidden_sections_note(painter, QRectF(area.left(), y, area.width(), area.height()),
                                 hidden, t);

  const qreal rest = std::max<qreal>(area.bottom() - y, 0);
  qreal timeline_height = 0;
  if (shown.contains(QStringLiteral("timeline"))) {
    timeline_height = shown.size() == 1 ? rest : std::max(rest * 0.45, kTimelineLines * line);
    paint_timeline(painter, QRectF(area.left(), y, area.width(), timeline_height));
  }
  if (!shown.contains(QStringLiteral("decode-time"))) return;
  const qreal bottom_top = y + timeline_height + (timeline_height > 0 ? 12 : 0);
  const QRectF bottom(area.left(), bottom_top, area.width(), area.bottom() - bottom_top);
  const qreal split = bottom.width() * 0.58;
  const QRectF decode_chart(bottom.left(), bottom.top(), split - 16, bottom.height());
  paint_decode_chart(painter, decode_chart);
  mark_element(QStringLiteral("decode-time"), decode_chart);
  paint_throughput(painter, QRectF(bottom.left() + split + 8, bottom.top(),
                                   bottom.width() - split - 8, bottom.height()));
}

void PhasesPanel::paint_timeline(QPainter& painter, const QRectF& area) {
  const Theme& t = theme();
  const qreal top = area.top() + chart::draw_heading(painter, area, tr("Steps over time"), t);
  const QFontMetricsF metrics(painter.font());
  const QString steps_label = tr("steps");
  const QString kernels_label = tr("kernels");
  const qreal label_width =
      std::max(metrics.horizontalAdvance(steps_label), metrics.horizontalAdvance(kernels_label)) +
      10;

  chart::AxesSpec spec;
  spec.x_label = tr("time since the first step (ms)");
  const chart::Range full = time_axis_ms();
  spec.x = x_window(QStringLiteral("timeline"), full, full.span() / 200);
  spec.y = {0.0, 2.0};
  spec.y_ticks = 0;
  spec.x_ticks = 8;
  const chart::Frame frame = chart::draw_axes(
      painter,
      QRectF(area.left() + label_width, top, area.width() - label_width, area.bottom() - top), spec,
      t);
  const QRectF plot = frame.plot();
  const QRectF steps_lane(plot.left(), plot.top() + 4, plot.width(), plot.height() / 2 - 6);
  const QRectF kernel_lane(plot.left(), plot.center().y() + 2, plot.width(), plot.height() / 2 - 6);

  painter.setPen(t.text);
  painter.drawText(QRectF(area.left(), steps_lane.top(), label_width - 6, steps_lane.height()),
                   Qt::AlignRight | Qt::AlignVCenter, steps_label);
  painter.drawText(QRectF(area.left(), kernel_lane.top(), label_width - 6, kernel_lane.height()),
                   Qt::AlignRight | Qt::AlignVCenter, kernels_label);

  const double origin = snapshot_.steps.front().start_ms;
  painter.save();
  painter.setClipRect(plot);  // zoomed in, steps reach past the plot's ends
  painter.setFont(chart::small_font(font()));
  const QFontMetricsF small(painter.font());
  for (const StepBar& s : snapshot_.steps) {
    const StepPhase phase = phase_of(s);
    if (phase == StepPhase::kIdle || s.end_ms - origin < spec.x.min ||
        s.start_ms - origin > spec.x.max)
      continue;
    const qreal x0 = frame.x(s.start_ms - origin);
    const qreal x1 = std::max(frame.x(s.end_ms - origin), x0 + 1.5);
    const QRectF bar(x0, steps_lane.top(), x1 - x0, steps_lane.height());
    const QColor fill = phase_color(phase, t);
    painter.fillRect(bar, fill);
    mark_element(phase == StepPhase::kDecode ? QStringLiteral("decode") : QStringLiteral("prefill"),
                 bar.intersected(plot));
    if (phase == StepPhase::kMixed) {
      painter.fillRect(
          QRectF(x0, bar.bottom() - bar.height() * 0.35, bar.width(), bar.height() * 0.35),
          t.decode);
    }
    if (phase != StepPhase::kDecode) {
      const QString label = tr("%1 tok").arg(s.prefill_tokens);
      if (small.horizontalAdvance(label) + 6 < bar.width()) {
        chart::draw_text_on_fill(
            painter, bar.adjusted(0, 0, 0, phase == StepPhase::kMixed ? -bar.height() * 0.35 : 0),
            Qt::AlignCenter, label, fill, t);
      }
    }
  }
  painter.setFont(font());
  paint_kernel_strip(painter, frame, kernel_lane);
  painter.restore();
  timeline_ = frame;
  timeline_lanes_ = QRectF(steps_lane.topLeft(), kernels_measured() ? kernel_lane.bottomRight()
                                                                    : steps_lane.bottomRight());
  mark_zoomable(painter, QStringLiteral("timeline"), plot);
  // The step under the mouse, described while the mouse stays on its bar.
  add_tooltip([this](QPointF pos) -> std::optional<HoverHit> {
    const std::optional<size_t> index = step_at(pos);
    if (!index) return std::nullopt;
    const StepBar& s = snapshot_.steps[*index];
    const double first = snapshot_.steps.front().start_ms;
    const qreal x0 = timeline_.x(s.start_ms - first);
    const qreal x1 = std::max(timeline_.x(s.end_ms - first), x0 + 1.5);
    return HoverHit{step_tooltip(s), QRectF(x0, timeline_lanes_.top(), x1 - x0,
                                            timeline_lanes_.height())
                                         .adjusted(-1.5, 0, 1.5, 0)};
  });
}

void PhasesPanel::paint_kernel_strip(QPainter& painter, const chart::Frame& frame,
                                     const QRectF& lane) {
  const Theme& t = theme();
  if (!kernels_measured()) {
    chart::draw_note(painter, lane, kernel_note(), t);
    add_tooltip(lane, tr("This backend does not time individual kernels, so the split of each step "
                         "into matmul, attention, norm and other is not shown."));
    return;
  }
  const double origin = snapshot_.steps.front().start_ms;
  for (const StepBar& s : snapshot_.steps) {
    if (!s.kernels_measured || duration(s) <= 0.0) continue;
    const qreal x0 = frame.x(s.start_ms - origin);
    const qreal width = std::max(frame.x(s.end_ms - origin) - x0, 1.5);
    // Each class gets its share of the step's duration; time outside kernels stays blank.
    qreal x = x0;
    for (const KernelClass& k : kKernels) {
      const qreal w = std::min<qreal>(width * (s.*k.ms) / duration(s), x0 + width - x);
      if (w <= 0) continue;
      painter.fillRect(QRectF(x, lane.top(), w, lane.height()), kernel_color(k, t));
      x += w;
    }
  }
}

void PhasesPanel::paint_decode_chart(QPainter& painter, const QRectF& area) {
  const Theme& t = theme();
  qreal top = area.top() + chart::draw_heading(
                               painter, area, tr("Time per decode step against context length"), t);
  const std::vector<QPointF> points = decode_points();
  if (points.empty()) {
    chart::draw_note(painter, QRectF(area.left(), top, area.width(), area.bottom() - top),
                     tr("No decode steps yet."), t);
    return;
  }
  const bool kernels = kernels_measured();
  std::vector<chart::LegendEntry> entries = {
      {.label = tr("whole step"), .color = t.decode, .series = QStringLiteral("whole step")}};
  if (kernels) {
    entries.push_back({.label = tr("attention"), .color = t.series(kKernels[1].series),
                       .series = QStringLiteral("attention")});
    entries.push_back({.label = tr("matmul"), .color = t.series(kKernels[0].series),
                       .series = QStringLiteral("matmul")});
  }
  top += draw_series_legend(painter, QRectF(area.left(), top, area.width(), area.height()),
                            QStringLiteral("decode-time"), entries);

  double max_context = 1.0;
  double max_ms = 0.0;
  for (const QPointF& p : points) {
    max_context = std::max(max_context, p.x());
    max_ms = std::max(max_ms, p.y());
  }
  chart::AxesSpec spec;
  spec.x_label = tr("context length (tokens)");
  // A short title where the plot is only a few lines tall, so it stays beside the plot.
  spec.y_label = area.height() < 12 * QFontMetricsF(painter.font()).lineSpacing()
                     ? tr("ms per step")
                     : tr("time per step (ms)");
  const chart::Range full_x = chart::nice_range(0.0, max_context, 6, true);
  spec.x = x_window(QStringLiteral("decode-time"), full_x, 4.0);
  spec.y = chart::nice_range(0.0, max_ms, 5);
  spec.integer_x = true;
  const chart::Frame frame = chart::draw_axes(
      painter, QRectF(area.left(), top, area.width(), area.bottom() - top), spec, t);
  add_tooltip(frame.plot(),
              with_definition(tr("Each dot is one decode step: its measured step time against "
                                 "the longest context it attended over."),
                              snapshot_.help.step_time));

  // Each shown series' dots, with their values on hover.
  std::vector<std::pair<QPointF, QString>> values;
  auto dots = [&](const QString& series, double StepBar::*field, const QColor& color) {
    if (series_hidden(QStringLiteral("decode-time"), series)) return;
    painter.setPen(QPen(color.darker(130), 1));
    painter.setBrush(color);
    for (const StepBar& s : snapshot_.steps) {
      if (phase_of(s) != StepPhase::kDecode) continue;
      if (field != nullptr && !s.kernels_measured) continue;
      const double ms = field == nullptr ? duration(s) : s.*field;
      const QPointF at = frame.point(double(s.context_tokens), ms);
      painter.drawEllipse(at, 3.2, 3.2);
      if (frame.plot().contains(at)) {
        values.emplace_back(at, tr("Step %1, context %2 tokens: %3 %4 ms")
                                    .arg(s.index)
                                    .arg(s.context_tokens)
                                    .arg(series, chart::format_number(ms)));
      }
    }
  };
  painter.save();
  painter.setClipRect(frame.plot().adjusted(-4, -4, 4, 4));
  dots(QStringLiteral("whole step"), nullptr, t.decode);
  if (kernels) {
    dots(QStringLiteral("attention"), &StepBar::attention_ms, t.series(kKernels[1].series));
    dots(QStringLiteral("matmul"), &StepBar::matmul_ms, t.series(kKernels[0].series));
  }
  painter.restore();
  mark_zoomable(painter, QStringLiteral("decode-time"), frame.plot());
  add_point_tooltips(std::move(values));
}

void PhasesPanel::paint_throughput(QPainter& painter, const QRectF& area) {
  const Theme& t = theme();
  // Over every step the timeline shows, not one request's: a lesson's table reads its request.
  qreal y = area.top() +
            chart::draw_heading(painter, area, tr("Throughput per phase, all steps above"), t);
  const QFontMetricsF metrics(painter.font());
  const QStringList labels = throughput_labels();
  const std::array<double, 2> rates = {snapshot_.prefill_tokens_per_s,
                                       snapshot_.decode_tokens_per_s};
  const std::array<QColor, 2> colors = {t.prefill, t.decode};
  const std::array<QString, 2> tips = {
      with_definition(tr("Prefill steps (prompt tokens only): many tokens share each weight "
                         "read. Not measured while every prompt shares its step with decodes "
                         "(mixed steps are neither phase)."),
                      snapshot_.help.throughput),
      with_definition(tr("Decode steps (one new token per sequence): each step reads all "
                         "weights for one token per sequence."),
                      snapshot_.help.throughput)};
  const double max_rate = std::max({rates[0], rates[1], 1e-9});
  const qreal bar_height = metrics.height() * 1.3;
  for (size_t i = 0; i < 2; ++i) {
    painter.setPen(t.text);
    painter.drawText(QRectF(area.left(), y, area.width(), metrics.height()), Qt::AlignLeft,
                     labels[int(i)]);
    y += metrics.height() + 2;
    const QRectF bar(area.left(), y, std::max<qreal>(area.width() * rates[i] / max_rate, 2.0),
                     bar_height);
    painter.fillRect(bar, colors[i]);
    add_tooltip(QRectF(area.left(), y - metrics.height() - 2, area.width(),
                       bar_height + metrics.height() + 2),
                tips[i]);
    y += bar_height + 8;
  }

  // Mean step cost per phase: the measured reason the two rates differ.
  for (StepPhase phase : {StepPhase::kPrefill, StepPhase::kDecode}) {
    double total_ms = 0.0;
    int64_t tokens = 0;
    int count = 0;
    for (const StepBar& s : snapshot_.steps) {
      if (phase_of(s) != phase) continue;
      total_ms += duration(s);
      tokens += phase == StepPhase::kPrefill ? s.prefill_tokens : s.decode_tokens;
      ++count;
    }
    if (count == 0) continue;
    const QString line = tr("%1: %2 %3, %4 ms and %5 tokens per step on average")
                             .arg(phase == StepPhase::kPrefill ? tr("Prefill") : tr("Decode"))
                             .arg(count)
                             .arg(count == 1 ? tr("step") : tr("steps"))
                             .arg(chart::format_number(total_ms / count))
                             .arg(chart::format_number(double(tokens) / count));
    painter.setPen(t.muted_text);
    if (!draw_if_it_fits(painter, QRectF(area.left(), y, area.width(), area.bottom() - y), line,
                         y))
      return;
  }
  const QString why = tr(
      "Why they differ: a prefill step reads every weight once for many prompt tokens, so it is "
      "limited by arithmetic; a decode step reads every weight for one token per sequence, so it "
      "is limited by memory bandwidth.");
  painter.setPen(t.text);
  draw_if_it_fits(painter, QRectF(area.left(), y + 6, area.width(), area.bottom() - y - 6), why,
                  y);
}

}  // namespace servescope::widgets
