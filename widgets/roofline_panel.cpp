#include "widgets/roofline_panel.h"

#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <tuple>

#include "widgets/chart_painting.h"
#include "widgets/label_layout.h"
#include "widgets/theme.h"

namespace servescope::widgets {
namespace {

constexpr double kMarkerRadius = 5.0;

// A marker's outline: dashed when the point is judged against the cache roof (drawn dashed),
// solid against main memory's.
QPen judged_pen(const Theme& t, PointRoof roof) {
  return QPen(t.text, 1.2, roof == PointRoof::kCache ? Qt::DashLine : Qt::SolidLine);
}
constexpr QSize kMinimumSize(420, 300);

QString phase_name(StepPhase phase) {
  switch (phase) {
    case StepPhase::kPrefill:
      return QStringLiteral("prefill");
    case StepPhase::kDecode:
      return QStringLiteral("decode");
    case StepPhase::kMixed:
      return QStringLiteral("mixed");
    case StepPhase::kIdle:
      return QStringLiteral("idle");
  }
  return {};
}

// Prefill a square, decode a circle, mixed a triangle: told apart without colour.
QPainterPath marker_path(StepPhase phase, QPointF centre, double radius) {
  QPainterPath path;
  switch (phase) {
    case StepPhase::kPrefill:
      path.addRect(QRectF(centre.x() - radius, centre.y() - radius, 2 * radius, 2 * radius));
      break;
    case StepPhase::kDecode:
    case StepPhase::kIdle:  // no FLOPs, so never placed; a circle for completeness
      path.addEllipse(centre, radius, radius);
      break;
    case StepPhase::kMixed:
      path.moveTo(centre.x(), centre.y() - 1.2 * radius);
      path.lineTo(centre.x() + 1.1 * radius, centre.y() + 0.8 * radius);
      path.lineTo(centre.x() - 1.1 * radius, centre.y() + 0.8 * radius);
      path.closeSubpath();
      break;
  }
  return path;
}

// Colour of the i-th of `count` batch sizes (smallest first): an ordered scale, darkest for
// the smallest, so that 16 sizes stay in order where 8 hues repeated (1 and 12 looked alike).
QColor batch_colour(const Theme& t, size_t i, size_t count) {
  return t.ordinal(count <= 1 ? 0.5 : double(i) / double(count - 1));  // one size: mid-scale
}

bool placeable(const RooflinePoint& p) {
  return p.intensity_flop_per_byte > 0.0 && p.gflop_per_s > 0.0 &&
         std::isfinite(p.intensity_flop_per_byte) && std::isfinite(p.gflop_per_s);
}

// Log-log mapping of the plot area.
struct LogMap {
  QRectF area;
  DecadeRange x;
  DecadeRange y;

  double px(double value) const {
    return area.left() + (std::log10(value) - x.low) / (x.high - x.low) * area.width();
  }
  double py(double value) const {
    return area.bottom() - (std::log10(value) - y.low) / (y.high - y.low) * area.height();
  }
  QPointF at(double vx, double vy) const { return {px(vx), py(vy)}; }
  double x_min() const { return std::pow(10.0, x.low); }
  double x_max() const { return std::pow(10.0, x.high); }
  double y_min() const { return std::pow(10.0, y.low); }
};

}  // namespace

double attainable_gflop_per_s(double intensity, double bandwidth_gb_per_s,
                              double compute_gflop_per_s) {
  const double slope = bandwidth_gb_per_s * intensity;
  return compute_gflop_per_s > 0.0 ? std::min(slope, compute_gflop_per_s) : slope;
}

double ridge_intensity(double bandwidth_gb_per_s, double compute_gflop_per_s) {
  return bandwidth_gb_per_s > 0.0 ? compute_gflop_per_s / bandwidth_gb_per_s : 0.0;
}

DecadeRange decade_range(const std::vector<double>& positive_values) {
  double lo = 0.0;
  double hi = 0.0;
  for (const double v : positive_values) {
    if (!(v > 0.0) || !std::isfinite(v)) continue;
    lo = lo > 0.0 ? std::min(lo, v) : v;
    hi = std::max(hi, v);
  }
  if (lo <= 0.0) return {};
  DecadeRange range{static_cast<int>(std::floor(std::log10(lo))),
                    static_cast<int>(std::ceil(std::log10(hi)))};
  if (range.high <= range.low) range.high = range.low + 1;
  return range;
}

QString decade_label(int exponent) {
  static const char* const kSuffix[] = {"", "k", "M", "G", "T", "P"};
  if (exponent < 0) return QString::number(std::pow(10.0, exponent), 'f', -exponent);
  const int group = std::min(exponent / 3, 5);
  const int rest = exponent - 3 * group;
  return QString::number(static_cast<int64_t>(std::pow(10.0, rest))) + kSuffix[group];
}

namespace {

// A roof's label: its name and figure, marked when a measured step raised it.
QString bandwidth_label(const QString& name, double gb_per_s, bool raised) {
  const QString label = RooflinePanel::tr("%1 %2 GB/s").arg(name, chart::format_number(gb_per_s));
  return raised ? RooflinePanel::tr("%1 (raised by a measured step)").arg(label) : label;
}

QString compute_label(double gflop_per_s, bool raised) {
  const QString label =
      RooflinePanel::tr("compute %1 GFLOP/s").arg(chart::format_number(gflop_per_s));
  return raised ? RooflinePanel::tr("%1 (raised by a measured step)").arg(label) : label;
}

}  // namespace

RooflinePanel::RooflinePanel(QWidget* parent) : PanelView(parent) { update_ranges(); }

QSize RooflinePanel::minimumSizeHint() const { return kMinimumSize; }

void RooflinePanel::set_snapshot(RooflineSnapshot snapshot) {
  snapshot_ = std::move(snapshot);
  // A roof that is not a positive finite number was not measured.
  for (double* roof :
       {&snapshot_.cache_gb_per_s, &snapshot_.memory_gb_per_s, &snapshot_.compute_gflop_per_s}) {
    if (!(*roof > 0.0) || !std::isfinite(*roof)) *roof = 0.0;
  }
  update_ranges();
  update();
}

QString RooflinePanel::title() const { return tr("Roofline"); }

std::vector<RooflinePanel::Bandwidth> RooflinePanel::bandwidths() const {
  std::vector<Bandwidth> result;
  if (snapshot_.cache_gb_per_s > 0.0) {
    result.push_back({tr("cache"), snapshot_.cache_gb_per_s, true, snapshot_.cache_raised});
  }
  if (snapshot_.memory_gb_per_s > 0.0) {
    result.push_back(
        {tr("main memory"), snapshot_.memory_gb_per_s, false, snapshot_.memory_raised});
  }
  return result;
}

double RooflinePanel::roof_gflop_per_s(const RooflinePoint& point) const {
  const double bandwidth =
      point.roof == PointRoof::kCache ? snapshot_.cache_gb_per_s : snapshot_.memory_gb_per_s;
  if (bandwidth <= 0.0) return snapshot_.compute_gflop_per_s;
  return attainable_gflop_per_s(point.intensity_flop_per_byte, bandwidth,
                                snapshot_.compute_gflop_per_s);
}

std::vector<RooflinePoint> RooflinePanel::points_above_roofs() const {
  constexpr double kRounding = 1e-9;  // a raised roof is the step's own figure, recomputed
  std::vector<RooflinePoint> above;
  for (const RooflinePoint& p : snapshot_.points) {
    const double roof = roof_gflop_per_s(p);
    if (placeable(p) && roof > 0.0 && p.gflop_per_s > roof * (1.0 + kRounding)) {
      above.push_back(p);
    }
  }
  return above;
}

QString RooflinePanel::raised_note() const {
  // The raised roofs grouped by the step that raised them, in the order cache, memory, compute.
  std::vector<std::pair<QString, QStringList>> by_step;
  const auto add = [&](bool raised, double figure, const QString& roof, const QString& by) {
    if (!raised || !(figure > 0.0)) return;
    const QString step = by.isEmpty() ? tr("a measured step") : by;
    const auto it = std::find_if(by_step.begin(), by_step.end(),
                                 [&](const auto& group) { return group.first == step; });
    if (it == by_step.end()) {
      by_step.push_back({step, {roof}});
    } else {
      it->second << roof;
    }
  };
  add(snapshot_.cache_raised, snapshot_.cache_gb_per_s, tr("cache"), snapshot_.cache_raised_by);
  add(snapshot_.memory_raised, snapshot_.memory_gb_per_s, tr("main memory"),
      snapshot_.memory_raised_by);
  add(snapshot_.compute_raised, snapshot_.compute_gflop_per_s, tr("compute"),
      snapshot_.compute_raised_by);
  QStringList notes;
  for (auto& [step, roofs] : by_step) {
    if (roofs.size() == 1) {
      notes << tr("%1 roof raised by %2").arg(roofs[0], step);
      continue;
    }
    const QString last = roofs.takeLast();
    notes << tr("%1 and %2 roofs raised by %3").arg(roofs.join(tr(", ")), last, step);
  }
  return notes.join(tr("; "));
}

QStringList RooflinePanel::judged_entries() const {
  int cache = 0;
  int memory = 0;
  for (const RooflinePoint& p : snapshot_.points) (p.roof == PointRoof::kCache ? cache : memory)++;
  QStringList entries;
  if (cache > 0) {
    entries << (cache == 1 ? tr("cache roof: 1 step") : tr("cache roof: %1 steps").arg(cache));
  }
  if (memory > 0) {
    entries << (memory == 1 ? tr("main memory roof: 1 step")
                            : tr("main memory roof: %1 steps").arg(memory));
  }
  return entries;
}

bool RooflinePanel::has_roofs() const {
  return !bandwidths().empty() || snapshot_.compute_gflop_per_s > 0.0;
}

QStringList RooflinePanel::notes() const {
  QStringList messages;
  if (!has_roofs()) messages << tr("device not probed yet");
  if (snapshot_.points.empty()) messages << tr("no data yet: press Generate");
  return messages;
}

std::vector<int64_t> RooflinePanel::batch_sizes() const {
  std::vector<int64_t> sizes;
  for (const RooflinePoint& p : snapshot_.points) sizes.push_back(p.batch_size);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

std::vector<double> RooflinePanel::ridge_points() const {
  std::vector<double> ridges;
  if (snapshot_.compute_gflop_per_s <= 0.0) return ridges;
  for (const Bandwidth& b : bandwidths()) {
    ridges.push_back(ridge_intensity(b.gb_per_s, snapshot_.compute_gflop_per_s));
  }
  return ridges;
}

QStringList RooflinePanel::roof_labels() const {
  QStringList labels;
  for (const Bandwidth& b : bandwidths()) labels << bandwidth_label(b.name, b.gb_per_s, b.raised);
  if (snapshot_.compute_gflop_per_s > 0.0) {
    labels << compute_label(snapshot_.compute_gflop_per_s, snapshot_.compute_raised);
  }
  return labels;
}

QStringList RooflinePanel::legend_entries() const {
  QStringList entries;
  for (const int64_t size : batch_sizes()) entries << tr("batch %1").arg(size);
  bool seen[4] = {false, false, false, false};
  for (const RooflinePoint& p : snapshot_.points) seen[static_cast<int>(p.phase)] = true;
  for (const StepPhase phase : {StepPhase::kPrefill, StepPhase::kDecode, StepPhase::kMixed}) {
    if (seen[static_cast<int>(phase)]) entries << phase_name(phase);
  }
  return entries;
}

void RooflinePanel::update_ranges() {
  std::vector<double> xs;
  std::vector<double> ys;
  for (const RooflinePoint& p : snapshot_.points) {
    if (!placeable(p)) continue;
    xs.push_back(p.intensity_flop_per_byte);
    ys.push_back(p.gflop_per_s);
  }
  for (const double ridge : ridge_points()) {
    xs.push_back(ridge / 4.0);  // some slope before the ridge and some roof after it
    xs.push_back(ridge * 4.0);
  }
  if (xs.empty()) xs = {0.1, 1000.0};
  x_decades_ = decade_range(xs);
  const double x_min = std::pow(10.0, x_decades_.low);
  for (const Bandwidth& b : bandwidths()) {
    ys.push_back(attainable_gflop_per_s(x_min, b.gb_per_s, snapshot_.compute_gflop_per_s));
  }
  if (snapshot_.compute_gflop_per_s > 0.0) ys.push_back(snapshot_.compute_gflop_per_s * 2.0);
  if (ys.empty()) ys = {1.0, 1000.0};
  y_decades_ = decade_range(ys);
}

QString RooflinePanel::csv() const {
  // One row per step; the roofs repeat on every row (0: not measured), then the bandwidth roof
  // the step is judged against and what that roof allows at its intensity.
  QString out = QStringLiteral(
      "step,phase,batch_size,intensity_flop_per_byte,gflop_per_s,cache_gb_per_s,"
      "memory_gb_per_s,compute_gflop_per_s,roof,roof_gflop_per_s\n");
  for (const RooflinePoint& p : snapshot_.points) {
    out +=
        QStringLiteral("%1,%2,%3,%4,%5,%6,%7,%8,%9,%10\n")
            .arg(p.step_index)
            .arg(phase_name(p.phase))
            .arg(p.batch_size)
            .arg(p.intensity_flop_per_byte, 0, 'g', 9)
            .arg(p.gflop_per_s, 0, 'g', 9)
            .arg(snapshot_.cache_gb_per_s, 0, 'g', 9)
            .arg(snapshot_.memory_gb_per_s, 0, 'g', 9)
            .arg(snapshot_.compute_gflop_per_s, 0, 'g', 9)
            .arg(p.roof == PointRoof::kCache ? QStringLiteral("cache") : QStringLiteral("memory"))
            .arg(roof_gflop_per_s(p), 0, 'g', 9);
  }
  return out;
}

// The legend's parts, in the order drawn; when the room is short the least needed go first.
struct LegendCell {
  QString text;
  bool ring = false;  // the latest step's ring, else a shape in a fill and outline
  StepPhase shape = StepPhase::kDecode;
  QColor fill;
  QPen outline;
};
struct LegendSection {
  QString heading;
  std::vector<LegendCell> cells;
  QString note;       // wrapped text instead of cells (which roofs were raised)
  int drop_rank = 0;  // 0: always shown; higher ranks are hidden first for room
  QColor note_colour;
};

// The legend laid out for its room: rows of cells (side by side where they fit the column's
// width) in as many columns of the plot's height as they need.
struct RooflineLegend {
  struct Row {
    QString heading;
    std::vector<LegendCell> cells;
    QString note;
    QColor note_colour;
    double height = 0.0;
  };
  double column_width = 0.0;
  double gap = 0.0;
  std::vector<Row> rows;
  std::vector<int> column_of;
  QStringList hidden;  // sections left out for room

  int columns() const { return column_of.empty() ? 0 : column_of.back() + 1; }
  double width() const { return columns() == 0 ? 0.0 : columns() * (column_width + gap) - gap; }
};

namespace {

double cell_width(const LegendCell& cell, const QFontMetricsF& fm) {
  return fm.height() * 1.4 + fm.horizontalAdvance(cell.text);
}

double wrapped_height(const QString& text, const QFontMetricsF& fm, double width) {
  return fm.boundingRect(QRectF(0, 0, width, 1e6), Qt::AlignLeft | Qt::TextWordWrap, text)
      .height();
}

// The sections as rows in columns of `column_height`, the hidden ones named in a last line.
RooflineLegend arrange_legend(const std::vector<LegendSection>& sections, const QStringList& hidden,
                              const QFontMetricsF& fm, double column_height) {
  const double line = fm.height();
  const double row_height = line * 1.25;
  const QString hidden_note =
      hidden.isEmpty() ? QString() : RooflinePanel::tr("not shown for room: %1").arg(hidden.join(", "));
  RooflineLegend legend;
  legend.gap = line;
  legend.hidden = hidden;
  for (const LegendSection& section : sections) {
    legend.column_width = std::max(legend.column_width, fm.horizontalAdvance(section.heading));
    for (const LegendCell& cell : section.cells)
      legend.column_width = std::max(legend.column_width, cell_width(cell, fm));
  }
  const double width = legend.column_width;
  std::vector<FlowRow> flow;
  const auto add = [&](RooflineLegend::Row row, bool keep_with_next) {
    flow.push_back({row.height, keep_with_next});
    legend.rows.push_back(std::move(row));
  };
  for (size_t i = 0; i < sections.size(); ++i) {
    const LegendSection& section = sections[i];
    if (i > 0) add({{}, {}, {}, {}, line * 0.4}, false);
    if (!section.heading.isEmpty()) add({section.heading, {}, {}, {}, row_height}, true);
    if (!section.note.isEmpty()) {
      add({{}, {}, section.note, section.note_colour, wrapped_height(section.note, fm, width)}, false);
    }
    // Cells side by side while they fit the column, a little apart.
    RooflineLegend::Row row{{}, {}, {}, {}, row_height};
    double used = 0.0;
    for (const LegendCell& cell_item : section.cells) {
      const double cell = cell_width(cell_item, fm);
      if (!row.cells.empty() && used + line * 0.6 + cell > width) {
        add(row, false);
        row.cells.clear();
        used = 0.0;
      }
      used += (row.cells.empty() ? 0.0 : line * 0.6) + cell;
      row.cells.push_back(cell_item);
    }
    if (!row.cells.empty()) add(row, false);
  }
  if (!hidden_note.isEmpty()) {
    add({{}, {}, {}, {}, line * 0.4}, false);
    add({{}, {}, hidden_note, {}, wrapped_height(hidden_note, fm, width)}, false);
  }
  legend.column_of = flow_into_columns(flow, column_height);
  return legend;
}

// The plot's frame: a title line, the log-log area (left of it the y title in one or two
// lines and the tick labels), and the legend on the right.
struct RooflineLayout {
  QRectF title;
  QRectF plot;
  QRectF legend;
  QString y_title;
};

}  // namespace

namespace {

RooflineLegend lay_out_legend(std::vector<LegendSection> sections, const QFontMetricsF& fm,
                              double column_height, double max_width) {
  QStringList hidden;
  for (;;) {
    RooflineLegend legend = arrange_legend(sections, hidden, fm, column_height);
    const auto last = std::max_element(
        sections.begin(), sections.end(),
        [](const LegendSection& a, const LegendSection& b) { return a.drop_rank < b.drop_rank; });
    if (legend.width() <= max_width || last == sections.end() || last->drop_rank == 0) {
      return legend;
    }
    // A note has no heading of its own: it is named by what it is about.
    hidden.prepend(last->heading.isEmpty() ? RooflinePanel::tr("raised roofs") : last->heading);
    sections.erase(last);
  }
}

}  // namespace

std::vector<LegendSection> RooflinePanel::legend_sections() const {
  std::vector<LegendSection> sections;
  if (snapshot_.points.empty()) return sections;
  const Theme& t = theme();
  const std::vector<int64_t> sizes = batch_sizes();
  const QStringList entries = legend_entries();
  LegendSection colours{tr("colour: batch size"), {}, {}, 0, {}};
  for (size_t i = 0; i < sizes.size(); ++i) {
    colours.cells.push_back({QString::number(sizes[i]), false, StepPhase::kDecode,
                             batch_colour(t, i, sizes.size()), QPen(t.text, 0.8)});
  }
  LegendSection shapes{tr("shape: phase"), {}, {}, 0, {}};
  for (const QString& entry : entries.mid(static_cast<int>(sizes.size()))) {
    const StepPhase phase = entry == phase_name(StepPhase::kPrefill)  ? StepPhase::kPrefill
                            : entry == phase_name(StepPhase::kDecode) ? StepPhase::kDecode
                                                                      : StepPhase::kMixed;
    shapes.cells.push_back({entry, false, phase, t.surface, QPen(t.text, 0.8)});
  }
  shapes.cells.push_back({tr("latest step"), true, StepPhase::kDecode, {}, QPen(t.highlight, 2.6)});
  sections.push_back(colours);
  sections.push_back(shapes);
  const QString raised = raised_note();
  // In the text colour: the highlight colour read at 3.9:1 on the light background.
  if (!raised.isEmpty()) sections.push_back({{}, {}, raised, 1, t.text});
  LegendSection judged{tr("judged against"), {}, {}, 2, {}};
  for (const QString& entry : judged_entries()) {
    const PointRoof roof = entry.startsWith(tr("cache")) ? PointRoof::kCache : PointRoof::kMemory;
    judged.cells.push_back({entry, false, StepPhase::kDecode, t.surface, judged_pen(t, roof)});
  }
  sections.push_back(judged);
  return sections;
}

namespace {

RooflineLayout roofline_layout(QRectF bounds, const QFontMetricsF& fm, double legend_width,
                               const QString& y_title) {
  const double line = fm.height();
  RooflineLayout layout;
  layout.title = QRectF(bounds.left() + 8, bounds.top() + 4, bounds.width() - 16, line * 1.4);
  const double top = layout.title.bottom() + line * 0.6;
  const double bottom = bounds.bottom() - line * 2.8;
  // The y title along the plot's height, broken in two when it is longer (never cut short).
  layout.y_title = chart::fit_title(y_title, fm, bottom - top);
  const auto title_lines = static_cast<double>(layout.y_title.count(QLatin1Char('\n')) + 1);
  const double left = bounds.left() + line * (0.6 + 1.1 * title_lines) +
                      fm.horizontalAdvance(QStringLiteral("100k"));
  const double right = bounds.right() - (legend_width > 0 ? legend_width + 20 : 12);
  layout.plot = QRectF(QPointF(left, top), QPointF(std::max(left + 10, right), bottom));
  layout.legend = QRectF(layout.plot.right() + 14, top, legend_width, bottom - top);
  return layout;
}

}  // namespace

void RooflinePanel::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  clear_tooltips();
  plot_area_ = QRectF();
  if (paint_if_too_small(painter, kMinimumSize)) return;
  painter.setRenderHint(QPainter::Antialiasing);
  painter.setFont(font());
  const Theme& t = theme();
  painter.fillRect(rect(), t.background);
  const QFontMetricsF fm(font());
  // The legend takes at most two fifths of the width; beyond that its least needed parts go.
  const double plot_height = height() - fm.height() * (1.4 + 0.6 + 2.8) - 4;
  const RooflineLegend legend =
      lay_out_legend(legend_sections(), fm, plot_height, 0.4 * width());
  const RooflineLayout layout =
      roofline_layout(rect(), fm, legend.width(), tr("achieved GFLOP/s (log scale)"));

  const QString device =
      snapshot_.device_name.isEmpty() ? tr("unknown device") : snapshot_.device_name;
  chart::draw_heading(
      painter, layout.title,
      QFontMetricsF(chart::heading_font(font()))
          .elidedText(tr("Roofline of %1").arg(device), Qt::ElideRight, layout.title.width()),
      t);
  add_tooltip(layout.plot, tr("Each engine step at its arithmetic intensity (FLOPs per byte "
                              "moved) and achieved speed, under the roofs measured on this "
                              "device."));
  paint_axes(painter, layout.plot, layout.y_title);
  // Labels go where they meet no line, point or other label.
  LabelPlacer placer(layout.plot.adjusted(2, 2, -2, -2));
  paint_roofs(painter, layout.plot, placer);
  paint_points(painter, layout.plot, placer);
  // A lesson's outline runs just outside the element it points at: no label under it, unless
  // only a place over another label is left.
  constexpr int kOutlineWeight = 100;
  const double outline = QFontMetricsF(font()).height() * 0.3 + 4;
  for (const QRectF& area : element_parts(highlight()).areas)
    placer.avoid(area.adjusted(-outline, -outline, outline, outline), kOutlineWeight);
  paint_roof_labels(painter, layout.plot, placer);
  plot_area_ = layout.plot;

  const QStringList messages = notes();
  if (!messages.isEmpty()) {
    QRectF box = layout.plot.adjusted(8, 8, -8, -8);
    painter.setPen(t.muted_text);
    painter.drawText(box, Qt::AlignCenter | Qt::TextWordWrap, messages.join(QLatin1Char('\n')));
  }
  paint_legend(painter, legend, layout.legend.topLeft());
  hidden_legend_sections_ = legend.hidden;
  // Last, so that a step's value wins over the roofs' and the plot's explanations under it.
  add_tooltip([this](QPointF pos) -> std::optional<HoverHit> {
    const QString text = point_tooltip(pos);
    if (text.isEmpty()) return std::nullopt;
    return HoverHit{text, {}};
  });
}

void RooflinePanel::paint_axes(QPainter& painter, const QRectF& plot, const QString& y_title) {
  const Theme& t = theme();
  const QFontMetricsF fm(font());
  const double line = fm.height();
  const LogMap map{plot, x_decades_, y_decades_};

  // Grid: decades solid, 2..9 faint; axis-aligned, so no antialiasing needed.
  painter.save();
  painter.setRenderHint(QPainter::Antialiasing, false);
  QColor faint = t.grid;
  faint.setAlphaF(0.45f);
  for (int e = x_decades_.low; e <= x_decades_.high; ++e) {
    for (int m = 1; m <= (e < x_decades_.high ? 9 : 1); ++m) {
      const double x = map.px(m * std::pow(10.0, e));
      painter.setPen(QPen(m == 1 ? t.grid : faint, 1));
      painter.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));
    }
  }
  for (int e = y_decades_.low; e <= y_decades_.high; ++e) {
    for (int m = 1; m <= (e < y_decades_.high ? 9 : 1); ++m) {
      const double y = map.py(m * std::pow(10.0, e));
      painter.setPen(QPen(m == 1 ? t.grid : faint, 1));
      painter.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y));
    }
  }
  painter.setPen(QPen(t.muted_text, 1));
  painter.setBrush(Qt::NoBrush);
  painter.drawRect(plot);
  painter.restore();

  // Decade labels, thinned when the plot is too small to hold them all.
  painter.setPen(t.text);
  const int x_count = x_decades_.high - x_decades_.low + 1;
  const int x_step = std::max(
      1, static_cast<int>(std::ceil(x_count * fm.horizontalAdvance(QStringLiteral("0.001 ")) /
                                    std::max(1.0, plot.width()))));
  for (int e = x_decades_.low; e <= x_decades_.high; e += x_step) {
    const double x = map.px(std::pow(10.0, e));
    painter.drawText(QRectF(x - 50, plot.bottom() + 3, 100, line), Qt::AlignHCenter | Qt::AlignTop,
                     decade_label(e));
  }
  // Decades at least a line and a half apart: the lowest label sits above the x axis, clear of
  // the x axis' first label, and needs the room of the one above it.
  const int y_count = y_decades_.high - y_decades_.low + 1;
  const int y_step =
      std::max(1, static_cast<int>(std::ceil(y_count * line * 1.6 / std::max(1.0, plot.height()))));
  for (int e = y_decades_.low; e <= y_decades_.high; e += y_step) {
    const double y = std::min(map.py(std::pow(10.0, e)), plot.bottom() - line / 2 + 2);
    painter.drawText(QRectF(plot.left() - 205, y - line / 2, 200, line),
                     Qt::AlignRight | Qt::AlignVCenter, decade_label(e));
  }

  const QRectF x_title(plot.left(), plot.bottom() + line * 1.4, plot.width(), line * 1.2);
  painter.drawText(x_title, Qt::AlignHCenter | Qt::AlignVCenter,
                   fm.elidedText(tr("arithmetic intensity (FLOP/byte, log scale)"), Qt::ElideRight,
                                 plot.width()));
  add_tooltip(x_title, tr("Arithmetic intensity: floating-point operations a step does per byte "
                          "it moves between memory and the processor."));
  const auto title_lines = static_cast<double>(y_title.count(QLatin1Char('\n')) + 1);
  painter.save();
  painter.translate(rect().left() + 2, plot.center().y());
  painter.rotate(-90);
  painter.drawText(QRectF(-plot.height() / 2, 0, plot.height(), line * 1.1 * title_lines),
                   Qt::AlignHCenter | Qt::AlignVCenter, y_title);
  painter.restore();
  add_tooltip(QRectF(rect().left(), plot.top(), line * 1.1 * title_lines, plot.height()),
              tr("Achieved performance: a step's FLOPs divided by its measured wall time."));
}

std::vector<RooflinePanel::RoofLine> RooflinePanel::roof_lines(const QRectF& plot) const {
  const LogMap map{plot, x_decades_, y_decades_};
  const double compute = snapshot_.compute_gflop_per_s;
  std::vector<RoofLine> lines;
  // Bandwidth slopes, each ending where it meets the compute roof.
  for (const Bandwidth& band : bandwidths()) {
    const double end_x = compute > 0.0
                             ? std::min(ridge_intensity(band.gb_per_s, compute), map.x_max())
                             : map.x_max();
    // The part inside the plot starts where the slope rises above its floor.
    const double visible_x = std::max(map.x_min(), map.y_min() / band.gb_per_s);
    lines.push_back({band, QLineF(map.at(map.x_min(), band.gb_per_s * map.x_min()),
                                  map.at(end_x, band.gb_per_s * end_x)),
                     QLineF(map.at(visible_x, band.gb_per_s * visible_x),
                            map.at(end_x, band.gb_per_s * end_x))});
  }
  return lines;
}

void RooflinePanel::paint_roofs(QPainter& painter, const QRectF& plot, LabelPlacer& placer) {
  const Theme& t = theme();
  const LogMap map{plot, x_decades_, y_decades_};
  const double compute = snapshot_.compute_gflop_per_s;
  const std::vector<Bandwidth> bands = bandwidths();
  painter.save();
  painter.setClipRect(plot);
  for (const RoofLine& roof : roof_lines(plot)) {
    const bool is_cache = roof.band.cache;
    // Roofs are neutral (the data is in colour): main memory solid, cache dashed and muted.
    painter.setPen(QPen(is_cache ? t.muted_text : t.text, 2.4,
                        is_cache ? Qt::DashLine : Qt::SolidLine));
    painter.drawLine(roof.line);
    placer.avoid(roof.visible);
    QPainterPath roof_path(roof.line.p1());
    roof_path.lineTo(roof.line.p2());
    mark_element(is_cache ? QStringLiteral("cache-roof") : QStringLiteral("memory-roof"),
                 roof_path);
    const QRectF hit = QRectF(roof.line.p1(), roof.line.p2()).normalized().adjusted(-4, -4, 4, 4);
    const QString measured = roof.band.raised ? tr(" A measured step read faster than the probe "
                                                   "did, so the roof is that step's figure.")
                                              : QString();
    add_tooltip(hit, (is_cache ? tr("Cache bandwidth: the best this device read when its data "
                                    "stays in cache; the ceiling for steps whose weights and KV "
                                    "fit the last-level cache.")
                               : tr("Main-memory bandwidth: the best this device read from "
                                    "memory; the ceiling for steps whose weights and KV do not "
                                    "fit the last-level cache.")) +
                         measured);
  }

  if (compute > 0.0) {
    double roof_start = bands.empty() ? map.x_min() : map.x_max();
    for (const Bandwidth& band : bands) {
      roof_start = std::min(roof_start, ridge_intensity(band.gb_per_s, compute));
    }
    painter.setPen(QPen(t.text, 2.4));
    const QPointF roof_left = map.at(std::max(roof_start, map.x_min()), compute);
    const QLineF roof(roof_left, map.at(map.x_max(), compute));
    painter.drawLine(roof);
    placer.avoid(roof);
    QPainterPath compute_path(roof.p1());
    compute_path.lineTo(roof.p2());
    mark_element(QStringLiteral("compute-roof"), compute_path);
    const double line = QFontMetricsF(font()).height();
    add_tooltip(
        QRectF(roof_left.x(), roof_left.y() - line * 1.3, plot.right() - roof_left.x(), line * 1.6),
        tr("Compute roof: the most floating-point operations per second this device reached "
           "(the probe's product in the model's weight type, or a measured step that beat it)."));
    for (const Bandwidth& band : bands) {
      const QPointF at = map.at(ridge_intensity(band.gb_per_s, compute), compute);
      painter.setPen(QPen(t.muted_text, 1, Qt::DotLine));
      const QLineF drop(at, QPointF(at.x(), plot.bottom()));
      painter.drawLine(drop);
      placer.avoid(drop);
      painter.setPen(QPen(t.text, 1.2));
      painter.setBrush(t.background);
      painter.drawEllipse(at, 4, 4);
      mark_element(QStringLiteral("ridge"), QRectF(at - QPointF(4, 4), QSizeF(8, 8)));
      painter.setBrush(Qt::NoBrush);
    }
  }
  painter.restore();
}

namespace {

// Boxes of `size` beside a point of a line that rises to the right: above and left of it
// (the line passes under the box's lower right corner), or below and right of it.
QRectF box_above(QPointF at, QSizeF size, double gap) {
  return QRectF(QPointF(at.x() - gap - size.width(), at.y() - gap - size.height()), size);
}
QRectF box_below(QPointF at, QSizeF size, double gap) {
  return QRectF(QPointF(at.x() + gap, at.y() + gap), size);
}

}  // namespace

void RooflinePanel::paint_roof_labels(QPainter& painter, const QRectF& plot, LabelPlacer& placer) {
  const Theme& t = theme();
  const QFontMetricsF fm(font());
  const double line = fm.height();
  const LogMap map{plot, x_decades_, y_decades_};
  const double compute = snapshot_.compute_gflop_per_s;
  const auto draw = [&](const std::optional<QRectF>& box, const QColor& colour,
                        const QString& text) {
    if (!box) return;
    painter.setPen(colour);
    painter.drawText(*box, Qt::AlignLeft | Qt::AlignVCenter, text);
  };
  // Ridges first (their place is fixed: beside their drop line), then the compute roof's
  // figure over its line, then the slopes', which may go anywhere along them.
  if (compute > 0.0) {
    for (const Bandwidth& band : bandwidths()) {
      const double ridge = ridge_intensity(band.gb_per_s, compute);
      const double x = map.px(ridge);
      // The unit is the x axis': said there, so the label stays short in a crowded plot.
      const QString text = tr("ridge %1").arg(chart::format_number(ridge));
      const double width = fm.horizontalAdvance(text);
      std::vector<QRectF> candidates;
      for (int level = 0; level < 6; ++level) {
        const double top = plot.bottom() - line * (1.2 + 1.1 * level);
        candidates.emplace_back(x + 6, top, width, line);
        candidates.emplace_back(x - 6 - width, top, width, line);
      }
      const std::optional<QRectF> box = placer.place(candidates);
      draw(box, t.muted_text, text);
      if (box) {
        add_tooltip(*box, tr("Ridge point: the intensity (compute / bandwidth) above which a "
                             "step can be compute bound rather than bandwidth bound."));
      }
    }
    const QString text = compute_label(compute, snapshot_.compute_raised);
    const QSizeF size(fm.horizontalAdvance(text), line);
    const double y = map.py(compute);
    std::vector<QRectF> candidates;
    // Over the roof, else under it, else a line higher (clear of a ridge a lesson outlines).
    for (const double y_top : {y - 4 - line, y + 4, y - 4 - 2 * line}) {
      for (double right = plot.right() - 8; right - size.width() > plot.left(); right -= line * 2)
        candidates.emplace_back(QPointF(right - size.width(), y_top), size);
    }
    draw(placer.place(candidates), t.text, text);
  }
  const std::vector<RoofLine> roofs = roof_lines(plot);
  // A figure nearer another roof's line than its own reads as that roof's ("main memory" over
  // the dashed cache line): such places are taken only when there is no other.
  const auto nearer_own_line = [&roofs](const RoofLine& own, const QRectF& box) {
    const double mine = distance_to_segment(box.center(), own.visible);
    for (const RoofLine& other : roofs) {
      if (&other != &own && distance_to_segment(box.center(), other.visible) < mine) return false;
    }
    return true;
  };
  for (const RoofLine& roof : roofs) {
    // Cache above its line, main memory below, when there is room; along the visible part.
    const auto candidates = [&](const QString& text) {
      const QSizeF size(fm.horizontalAdvance(text), line);
      std::vector<QRectF> preferred;
      std::vector<QRectF> other;
      // Next to the line, else a little further off where points (or a lesson's outline
      // around them) hug it.
      for (const double gap : {3.0, 12.0, 1.5 * line}) {
        for (int step = 1; step < 40; ++step) {
          const QPointF at = roof.visible.pointAt(step / 40.0);
          preferred.push_back(roof.band.cache ? box_above(at, size, gap)
                                              : box_below(at, size, gap));
          other.push_back(roof.band.cache ? box_below(at, size, gap) : box_above(at, size, gap));
        }
      }
      preferred.insert(preferred.end(), other.begin(), other.end());
      std::stable_partition(preferred.begin(), preferred.end(), [&](const QRectF& box) {
        return nearer_own_line(roof, box);
      });
      return preferred;
    };
    // Where the whole figure finds no free place, the figure without "(raised by a measured
    // step)" (the legend and the tooltip say it) before any place that meets something.
    const QString full = bandwidth_label(roof.band.name, roof.band.gb_per_s, roof.band.raised);
    const QString brief = bandwidth_label(roof.band.name, roof.band.gb_per_s, false);
    QString text = full;
    std::optional<QRectF> box = placer.place_free(candidates(full));
    if (!box && brief != full) {
      text = brief;
      box = placer.place_free(candidates(brief));
    }
    if (!box) box = placer.place(candidates(text));
    draw(box, roof.band.cache ? t.muted_text : t.text, text);
  }
}

void RooflinePanel::paint_points(QPainter& painter, const QRectF& plot, LabelPlacer& placer) {
  const Theme& t = theme();
  const LogMap map{plot, x_decades_, y_decades_};
  const std::vector<int64_t> sizes = batch_sizes();
  painter.save();
  painter.setClipRect(plot.adjusted(-kMarkerRadius, -kMarkerRadius, kMarkerRadius, kMarkerRadius));
  // A long session repeats steps at the same spot: a marker is drawn once per pixel, shape
  // and colour (its last occurrence, so the drawing order stays the steps' order).
  std::vector<char> draw(snapshot_.points.size(), 0);
  std::set<std::tuple<int64_t, int64_t, int, int64_t>> seen;
  const RooflinePoint* latest = nullptr;
  for (size_t i = snapshot_.points.size(); i-- > 0;) {
    const RooflinePoint& p = snapshot_.points[i];
    if (!placeable(p)) continue;
    if (latest == nullptr) latest = &p;
    const QPointF at = map.at(p.intensity_flop_per_byte, p.gflop_per_s);
    draw[i] = seen.emplace(std::llround(at.x()), std::llround(at.y()), static_cast<int>(p.phase),
                           p.batch_size)
                  .second;
  }
  QRectF points_area;
  for (size_t i = 0; i < snapshot_.points.size(); ++i) {
    if (!draw[i]) continue;
    const RooflinePoint& p = snapshot_.points[i];
    const auto index = std::find(sizes.begin(), sizes.end(), p.batch_size) - sizes.begin();
    painter.setBrush(batch_colour(t, static_cast<size_t>(index), sizes.size()));
    // The outline says which roof judges the point: dashed like the cache roof, else solid.
    painter.setPen(judged_pen(t, p.roof));
    const QPainterPath marker =
        marker_path(p.phase, map.at(p.intensity_flop_per_byte, p.gflop_per_s), kMarkerRadius);
    painter.drawPath(marker);
    placer.avoid(marker.boundingRect());
    points_area = points_area.united(marker.boundingRect());
  }
  if (!points_area.isEmpty()) mark_element(QStringLiteral("points"), points_area);
  if (latest != nullptr) {
    painter.setBrush(Qt::NoBrush);
    painter.setPen(QPen(t.highlight, 2.6));
    const QPointF at = map.at(latest->intensity_flop_per_byte, latest->gflop_per_s);
    const double ring = kMarkerRadius + 5;
    painter.drawEllipse(at, ring, ring);
    placer.avoid(QRectF(at - QPointF(ring, ring), QSizeF(2 * ring, 2 * ring)));
  }
  painter.restore();
}

QString RooflinePanel::point_tooltip(QPointF pos) const {
  if (plot_area_.isEmpty()) return {};
  const LogMap map{plot_area_, x_decades_, y_decades_};
  const double reach = kMarkerRadius + 2;
  // The last step drawn is on top: search from the end.
  for (auto it = snapshot_.points.rbegin(); it != snapshot_.points.rend(); ++it) {
    const RooflinePoint& p = *it;
    if (!placeable(p)) continue;
    const QPointF at = map.at(p.intensity_flop_per_byte, p.gflop_per_s);
    if (std::abs(at.x() - pos.x()) > reach || std::abs(at.y() - pos.y()) > reach) continue;
    QString text = tr("Step %1 (%2, batch %3): %4 FLOP/byte, %5 GFLOP/s")
                       .arg(p.step_index)
                       .arg(phase_name(p.phase))
                       .arg(p.batch_size)
                       .arg(chart::format_number(p.intensity_flop_per_byte),
                            chart::format_number(p.gflop_per_s));
    const QString roof_name = p.roof == PointRoof::kCache ? tr("cache") : tr("main-memory");
    const double roof = roof_gflop_per_s(p);
    if (roof > 0.0) {
      text += tr(", %1% of what the %2 roof allows (its weights and KV %3 the last-level cache).")
                  .arg(chart::format_number(100.0 * p.gflop_per_s / roof), roof_name,
                       p.roof == PointRoof::kCache ? tr("fit") : tr("do not fit"));
    }
    return text;
  }
  return {};
}

void RooflinePanel::paint_legend(QPainter& painter, const RooflineLegend& legend,
                                 QPointF top_left) {
  if (legend.rows.empty()) return;
  const Theme& t = theme();
  const QFontMetricsF fm(font());
  const double line = fm.height();
  std::vector<double> column_y(static_cast<size_t>(legend.columns()), top_left.y());
  for (size_t i = 0; i < legend.rows.size(); ++i) {
    const RooflineLegend::Row& row = legend.rows[i];
    const int column = legend.column_of[i];
    double& y = column_y[static_cast<size_t>(column)];
    double x = top_left.x() + column * (legend.column_width + legend.gap);
    if (!row.heading.isEmpty()) {
      painter.setPen(t.muted_text);
      painter.drawText(QRectF(x, y, legend.column_width, row.height),
                       Qt::AlignLeft | Qt::AlignVCenter, row.heading);
    } else if (!row.note.isEmpty()) {
      painter.setPen(row.note_colour.isValid() ? row.note_colour : t.muted_text);
      painter.drawText(QRectF(x, y, legend.column_width, row.height),
                       Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, row.note);
    }
    for (const LegendCell& cell : row.cells) {
      const QPointF centre(x + line * 0.5, y + row.height / 2);
      painter.setPen(cell.outline);
      if (cell.ring) {
        painter.setBrush(Qt::NoBrush);
        painter.drawEllipse(centre, kMarkerRadius + 2, kMarkerRadius + 2);
      } else {
        painter.setBrush(cell.fill);
        painter.drawPath(marker_path(cell.shape, centre, kMarkerRadius));
      }
      painter.setPen(t.text);
      const double text_width = fm.horizontalAdvance(cell.text);
      painter.drawText(QRectF(x + line * 1.4, y, text_width + 1, row.height),
                       Qt::AlignLeft | Qt::AlignVCenter, cell.text);
      x += line * 1.4 + text_width + line * 0.6;
    }
    y += row.height;
  }
  painter.setBrush(Qt::NoBrush);
  add_tooltip(QRectF(top_left, QSizeF(legend.width(),
                                      *std::max_element(column_y.begin(), column_y.end()) -
                                          top_left.y())),
              tr("Legend: colour is the number of sequences in the step, shape is its phase, the "
                 "outline the roof it is judged against: dashed for the cache roof (its weights "
                 "and KV fit the last-level cache), solid for main memory. A roof is the best "
                 "this device did: when a step beats the probe's figure, the roof is raised to "
                 "that step's."));
}

}  // namespace servescope::widgets
