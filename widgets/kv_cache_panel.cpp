#include "widgets/kv_cache_panel.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>
#include <set>

#include "widgets/panel_sections.h"
#include "widgets/request_colours.h"
#include "widgets/theme.h"

namespace servescope::widgets {
namespace {

constexpr QSize kMinimumSize(560, 380);

// Lines of the panel's font each chart on the right needs to stay readable: its heading, its
// text or legend, and axes around a plot a few lines tall.
constexpr double kFormulaLinesBesideItsText = 8.0;  // the formula's own lines come on top
constexpr double kMemoryLines = 7.0;
constexpr double kLayersLines = 8.0;
constexpr double kReservationLines = 6.0;
// Paged against reserved takes its own lines only; the charts keep at least this many lines
// more than their minimum before it shows (below that their axis labels crowd).
constexpr double kChartSlackLines = 6.0;

QString event_letter(KvBlockEvent event) {
  switch (event) {
    case KvBlockEvent::kAllocate:
      return QStringLiteral("A");
    case KvBlockEvent::kWrite:
      return QStringLiteral("W");
    case KvBlockEvent::kFree:
      return QStringLiteral("F");
    case KvBlockEvent::kEvict:
      return QStringLiteral("E");
    case KvBlockEvent::kPreempt:
      return QStringLiteral("P");
    case KvBlockEvent::kPrefixHit:
      return QStringLiteral("H");
    case KvBlockEvent::kFork:
      return QStringLiteral("S");
    case KvBlockEvent::kCopyOnWrite:
      return QStringLiteral("C");
    case KvBlockEvent::kNone:
      break;
  }
  return {};
}

// Reddish purple: apart from your request's orange and the classmates' blues it rings.
QColor event_colour(const Theme& t) { return t.series(6); }

QString block_tooltip(const KvBlock& b, int index, int32_t block_size, const OwnRequests& own) {
  QString text = b.owner < 0 ? QObject::tr("Block %1: free").arg(index)
                             : QObject::tr("Block %1: %2, %3 of %4 tokens written")
                                   .arg(index)
                                   .arg(own.name(b.owner))
                                   .arg(b.fill)
                                   .arg(block_size);
  if (b.owner < 0 && b.cached_prefix)
    text += QObject::tr(", still holding a cached prefix that a new request can reuse");
  if (b.ref_count > 1)
    text += QObject::tr(", shared by %1 sequences with the same prompt prefix").arg(b.ref_count);
  if (b.last_event != KvBlockEvent::kNone) {
    text += QObject::tr("; last event: %1, %2 frames ago")
                .arg(kv_block_event_name(b.last_event))
                .arg(b.event_age_frames);
  }
  return text + QLatin1Char('.');
}

// The narrowest block that shows its event letter in a badge.
qreal letter_cell_width(const QFontMetricsF& small) { return small.height() * 2.2; }

}  // namespace

QString kv_block_event_name(KvBlockEvent event) {
  switch (event) {
    case KvBlockEvent::kAllocate:
      return QObject::tr("allocate");
    case KvBlockEvent::kWrite:
      return QObject::tr("write");
    case KvBlockEvent::kFree:
      return QObject::tr("free");
    case KvBlockEvent::kEvict:
      return QObject::tr("evict");
    case KvBlockEvent::kPreempt:
      return QObject::tr("preempt");
    case KvBlockEvent::kPrefixHit:
      return QObject::tr("prefix hit");
    case KvBlockEvent::kFork:
      return QObject::tr("shared by a sample");
    case KvBlockEvent::kCopyOnWrite:
      return QObject::tr("copy-on-write");
    case KvBlockEvent::kNone:
      break;
  }
  return QObject::tr("none");
}

KvCachePanel::KvCachePanel(QWidget* parent) : PanelView(parent) {}

void KvCachePanel::set_snapshot(KvCacheSnapshot snapshot) {
  snapshot_ = std::move(snapshot);
  update();
}

QSize KvCachePanel::minimumSizeHint() const { return kMinimumSize; }

QString KvCachePanel::title() const { return tr("KV cache"); }

QString KvCachePanel::csv() const {
  QString out = QStringLiteral(
      "block,owner_request,tokens_used,block_size,ref_count,cached_prefix,last_event,"
      "event_age_frames\n");
  for (size_t i = 0; i < snapshot_.blocks.size(); ++i) {
    const KvBlock& b = snapshot_.blocks[i];
    out += QStringLiteral("%1,%2,%3,%4,%5,%6,%7,%8\n")
               .arg(i)
               .arg(b.owner < 0 ? QString() : QString::number(b.owner))
               .arg(b.fill)
               .arg(snapshot_.block_size)
               .arg(b.ref_count)
               .arg(b.cached_prefix ? QStringLiteral("true") : QStringLiteral("false"))
               .arg(b.last_event == KvBlockEvent::kNone ? QString()
                                                        : kv_block_event_name(b.last_event))
               .arg(b.event_age_frames);
  }
  return out;
}

int KvCachePanel::used_block_count() const {
  return static_cast<int>(std::count_if(snapshot_.blocks.begin(), snapshot_.blocks.end(),
                                        [](const KvBlock& b) { return b.owner >= 0; }));
}

int64_t KvCachePanel::blocks_saved_by_sharing() const {
  int64_t saved = 0;
  for (const KvBlock& b : snapshot_.blocks) saved += std::max(0, b.ref_count - 1);
  return saved;
}

int KvCachePanel::shared_block_count() const {
  return static_cast<int>(std::count_if(snapshot_.blocks.begin(), snapshot_.blocks.end(),
                                        [](const KvBlock& b) { return b.ref_count > 1; }));
}

double KvCachePanel::event_strength(const KvBlock& block) {
  if (block.last_event == KvBlockEvent::kNone || block.event_age_frames < 0) return 0.0;
  return std::max(0.0, 1.0 - double(block.event_age_frames) / kEventFadeFrames);
}

int KvCachePanel::highlighted_block_count() const {
  return static_cast<int>(std::count_if(snapshot_.blocks.begin(), snapshot_.blocks.end(),
                                        [](const KvBlock& b) { return event_strength(b) > 0.0; }));
}

double KvCachePanel::bytes_per_token() const {
  const KvModelShape& m = snapshot_.model;
  return 2.0 * double(m.layers) * double(m.kv_heads) * double(m.head_dim) * m.bytes_per_element;
}

double KvCachePanel::bytes_per_block() const { return bytes_per_token() * snapshot_.block_size; }

double KvCachePanel::formula_bytes(int64_t tokens) const {
  const int64_t block = std::max<int32_t>(snapshot_.block_size, 1);
  const int64_t blocks = (std::max<int64_t>(tokens, 0) + block - 1) / block;
  return double(blocks) * bytes_per_block();
}

QString KvCachePanel::formula_text() const {
  const KvModelShape& m = snapshot_.model;
  const QString per_token = QString::fromStdString(units::format_number(bytes_per_token(), 2));
  const QString line1 =
      tr("per token: 2 (K and V) x %1 layers x %2 KV heads x %3 head dim x %4 B (%5) = %6 B")
          .arg(m.layers)
          .arg(m.kv_heads)
          .arg(m.head_dim)
          .arg(QString::number(m.bytes_per_element, 'g', 6),
               m.element_type.isEmpty() ? tr("?") : m.element_type, per_token);
  const QString line2 =
      tr("per block of %1 tokens: %1 x %2 B = %3; a request holds ceil(tokens / %1) blocks")
          .arg(snapshot_.block_size)
          .arg(per_token, chart::format_bytes(bytes_per_block()));
  return line1 + QLatin1Char('\n') + line2;
}

std::vector<chart::LegendEntry> KvCachePanel::legend(bool compact) const {
  const Theme& t = theme();
  std::set<int64_t> owners;
  for (const KvBlock& b : snapshot_.blocks) {
    if (b.owner >= 0) owners.insert(b.owner);
  }
  std::vector<chart::LegendEntry> entries = snapshot_.own_requests.legend(owners, t, compact);
  entries.push_back({tr("prefix-shared (x sequences)"), t.text, Qt::SolidPattern, true});
  entries.push_back({tr("free"), t.surface});
  entries.push_back({tr("free, prefix cached"), t.surface, Qt::BDiagPattern});
  entries.push_back({tr("recent event"), event_colour(t), Qt::SolidPattern, true});
  return entries;
}

QStringList KvCachePanel::legend_labels() const {
  QStringList labels;
  for (const chart::LegendEntry& e : legend()) labels << e.label;
  return labels;
}

QSize KvCachePanel::grid_shape(QSizeF area) const {
  const int n = static_cast<int>(snapshot_.blocks.size());
  if (n == 0 || area.width() <= 0 || area.height() <= 0) return {0, 0};
  // The column count that gives the largest square cells.
  int best_cols = 1;
  double best_cell = 0.0;
  for (int cols = 1; cols <= n; ++cols) {
    const int rows = (n + cols - 1) / cols;
    const double cell = std::min(area.width() / cols, area.height() / rows);
    if (cell > best_cell) {
      best_cell = cell;
      best_cols = cols;
    }
  }
  return {best_cols, (n + best_cols - 1) / best_cols};
}

std::vector<std::pair<QString, double>> KvCachePanel::memory_segments() const {
  const DeviceMemory& m = snapshot_.memory;
  std::vector<std::pair<QString, double>> segments = {{tr("weights"), m.weights_bytes},
                                                      {tr("KV cache"), m.kv_cache_bytes},
                                                      {tr("working memory"), m.working_bytes}};
  const double used = m.weights_bytes + m.kv_cache_bytes + m.working_bytes;
  if (m.capacity_bytes > 0)
    segments.emplace_back(tr("free"), std::max(0.0, m.capacity_bytes - used));
  return segments;
}

std::optional<int> KvCachePanel::block_at(QPointF pos) const {
  if (cell_ <= 0.0 || grid_columns_ <= 0) return {};
  const QPointF offset = pos - grid_origin_;
  if (offset.x() < 0 || offset.y() < 0) return {};
  const int col = int(offset.x() / cell_);
  const int row = int(offset.y() / cell_);
  const int64_t index = int64_t(row) * grid_columns_ + col;
  if (col >= grid_columns_ || index >= int64_t(snapshot_.blocks.size())) return {};
  return int(index);
}

QString KvCachePanel::block_tooltip_at(QPointF pos) const {
  const std::optional<int> index = block_at(pos);
  if (!index) return {};
  return block_tooltip(snapshot_.blocks[size_t(*index)], *index, snapshot_.block_size,
                       snapshot_.own_requests);
}

void KvCachePanel::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  cell_ = 0.0;
  grid_columns_ = 0;
  painter.setRenderHint(QPainter::Antialiasing);
  painter.setFont(font());
  clear_tooltips();
  if (snapshot_.blocks.empty()) {
    paint_empty_state(painter, tr("No KV cache yet: press Generate to see the blocks fill."));
    return;
  }
  if (paint_if_too_small(painter, kMinimumSize)) return;
  const Theme& t = theme();
  painter.fillRect(rect(), t.background);
  const QRectF area = QRectF(rect()).adjusted(12, 8, -12, -8);
  qreal y = area.top();
  int64_t retained = 0;
  for (const KvBlock& b : snapshot_.blocks) retained += b.owner >= 0 ? b.fill : 0;
  QString heading = tr("KV cache: %1 of %2 blocks in use, %3 tokens held in blocks of %4")
                        .arg(used_block_count())
                        .arg(snapshot_.blocks.size())
                        .arg(retained)
                        .arg(snapshot_.block_size);
  const qreal line = QFontMetricsF(font()).lineSpacing();
  explained_ = area.height() / line >= kLinesForExplanations;
  // In a projector's room the heading keeps its one line; the blocks' "xN" badges stay.
  if (const int64_t saved = blocks_saved_by_sharing(); saved > 0 && explained_) {
    heading += tr("; sharing saves %1 blocks, %2")
                   .arg(saved)
                   .arg(chart::format_bytes(static_cast<double>(saved) * bytes_per_block()));
  }
  y += chart::draw_heading(painter, area, heading, t);
  add_tooltip(QRectF(area.left(), area.top(), area.width(), y - area.top()),
              tr("The KV cache keeps every processed token's keys and values, in fixed-size blocks "
                 "handed to requests as they grow (paged attention). A block shared by n "
                 "sequences (a cached prefix, or samples of one prompt) is held once: n - 1 "
                 "blocks saved against each sequence holding its own copy."));
  y += chart::draw_legend(painter, QRectF(area.left(), y, area.width(), area.height()),
                          legend(!explained_), t) +
       6;

  // The right column keeps what the lesson highlights, then the formula chart, the device
  // memory and the layers, as many as the room holds; a note names the others.
  // In little room the charts' column is wider, so the formula takes fewer lines.
  const qreal split = area.width() * (explained_ ? 0.46 : 0.4);
  const qreal right_width = area.width() - split - 12;
  const double formula_lines =
      kFormulaLinesBesideItsText +
      QFontMetricsF(font())
              .boundingRect(QRectF(0, 0, right_width, 0), Qt::TextWordWrap, formula_text())
              .height() /
          line;
  const auto choose = [&](double lines, QStringList& hidden) {
    const std::vector<SectionNeed> needs = {
        {QStringLiteral("retained-bytes"), formula_lines},
        {QStringLiteral("memory"), kMemoryLines},
        {QStringLiteral("layers"), kLayersLines},
        {QStringLiteral("reservation"), kReservationLines + kChartSlackLines}};
    QStringList shown = sections_that_fit(needs, lines, highlight());
    // Where not even one fits, the grid takes the whole width, unless a lesson points there.
    const bool pointed_at = shown.size() == 1 && shown.front() == highlight();
    if (shown.size() == 1 && !pointed_at &&
        std::ranges::find(needs, shown.front(), &SectionNeed::name)->min_lines > lines)
      shown.clear();
    hidden.clear();
    if (!shown.contains(QStringLiteral("retained-bytes"))) hidden << tr("bytes against tokens");
    if (!shown.contains(QStringLiteral("layers"))) hidden << tr("bytes per layer");
    if (!shown.contains(QStringLiteral("memory"))) hidden << tr("device memory");
    // Paged against reserved, the least needed, shows where there is room and is not listed:
    // naming it too took the formula chart's last line in a projector's room.
    return shown;
  };
  const double body_lines = (area.bottom() - y) / line;
  QStringList hidden;
  QStringList shown = choose(body_lines, hidden);
  for (int i = 0; i < 2 && !hidden.isEmpty(); ++i)
    shown = choose(body_lines - hidden_sections_note_lines(font(), area.width(), hidden), hidden);
  y += draw_hidden_sections_note(painter, QRectF(area.left(), y, area.width(), area.height()),
                                 hidden, t);

  const QRectF body(area.left(), y, area.width(), std::max<qreal>(area.bottom() - y, 0));
  const QRectF grid(body.left(), body.top(), shown.isEmpty() ? body.width() : split - 12,
                    body.height());
  paint_grid(painter, grid);
  mark_element(QStringLiteral("blocks"), grid);
  const QRectF right(body.left() + split + 12, body.top(), body.width() - split - 12,
                     body.height());
  // Paged against reserved gets its own lines; each shown chart its share of the rest of the
  // column in proportion to the lines it needs, in the order formula, layers, memory.
  const std::pair<const char*, double> order[] = {{"retained-bytes", formula_lines},
                                                  {"layers", kLayersLines},
                                                  {"reservation", kReservationLines},
                                                  {"memory", kMemoryLines}};
  const bool reservation = shown.contains(QStringLiteral("reservation"));
  const qreal reservation_height = reservation ? kReservationLines * line + 8 : 0.0;
  double needed = 0.0;
  for (const auto& [name, lines] : order) {
    if (QLatin1String(name) != QLatin1String("reservation") && shown.contains(QLatin1String(name)))
      needed += lines;
  }
  qreal top = right.top();
  for (const auto& [name, lines] : order) {
    const QString element = QLatin1String(name);
    if (!shown.contains(element)) continue;
    const qreal height = element == QStringLiteral("reservation")
                             ? reservation_height - 8
                             : (right.height() - reservation_height) * lines / needed - 8;
    const QRectF box(right.left(), top, right.width(), height);
    if (element == QStringLiteral("retained-bytes"))
      paint_formula_chart(painter, box);
    else if (element == QStringLiteral("layers"))
      paint_layers(painter, box);
    else if (element == QStringLiteral("reservation"))
      paint_reservation(painter, box);
    else
      paint_memory(painter, box);
    mark_element(element, box);
    top = box.bottom() + 8;
  }
}

void KvCachePanel::paint_grid(QPainter& painter, const QRectF& area) {
  const Theme& t = theme();
  qreal top =
      area.top() +
      chart::draw_heading(painter, area,
                          explained_ ? tr("Block pool (block 0 top left; each fills bottom-up)")
                                     : tr("Block pool: each block fills bottom-up"),
                          t);
  painter.setFont(chart::small_font(font()));
  // The event letters need cells about two lines wide; in smaller cells the rings alone mark
  // the events.
  const QSize rough_shape = grid_shape(QSizeF(area.width(), area.bottom() - top));
  const bool letters =
      rough_shape.width() > 0 &&
      std::min(area.width() / rough_shape.width(), (area.bottom() - top) / rough_shape.height()) *
              0.84 >
          letter_cell_width(QFontMetricsF(painter.font()));
  const QString note =
      letters ? tr("Letters mark recent events: A allocate, W write, F free, E evict, P preempt, "
                   "H prefix hit, S shared by a sample, C copy-on-write.")
              : tr("Rings mark recent events; hover a block for which.");
  const QRectF note_box =
      painter.boundingRect(QRectF(area.left(), 0, area.width(), 1000), Qt::TextWordWrap, note);
  const QRectF grid(area.left(), top, area.width(), area.bottom() - top - note_box.height() - 6);
  const QSize shape = grid_shape(grid.size());
  if (shape.width() > 0) {
    const qreal cell = std::min(grid.width() / shape.width(), grid.height() / shape.height());
    grid_origin_ = grid.topLeft();
    cell_ = cell;
    grid_columns_ = shape.width();
    for (size_t i = 0; i < snapshot_.blocks.size(); ++i) {
      const int col = static_cast<int>(i) % shape.width();
      const int row = static_cast<int>(i) / shape.width();
      const QRectF box(grid.left() + col * cell, grid.top() + row * cell, cell, cell);
      paint_block(painter, box, snapshot_.blocks[i]);
    }
    painter.setPen(t.muted_text);
    painter.drawText(QRectF(area.left(), grid.top() + shape.height() * cell + 4, area.width(),
                            note_box.height()),
                     Qt::TextWordWrap, note);
    // The block under the mouse, described while the mouse stays on it.
    add_tooltip([this](QPointF pos) -> std::optional<HoverHit> {
      const std::optional<int> index = block_at(pos);
      if (!index) return std::nullopt;
      const QPointF corner = grid_origin_ + QPointF((*index % grid_columns_) * cell_,
                                                    (*index / grid_columns_) * cell_);
      return HoverHit{block_tooltip_at(pos), QRectF(corner, QSizeF(cell_, cell_))};
    });
  }
  painter.setFont(font());
}

void KvCachePanel::paint_block(QPainter& painter, const QRectF& cell, const KvBlock& b) {
  const Theme& t = theme();
  const qreal inset = std::clamp<qreal>(cell.width() * 0.08, 1.0, 4.0);
  const QRectF box = cell.adjusted(inset, inset, -inset, -inset);
  painter.fillRect(box, t.surface);
  if (b.owner < 0 && b.cached_prefix) painter.fillRect(box, QBrush(t.muted_text, Qt::BDiagPattern));
  if (b.owner >= 0) {
    const QColor color = snapshot_.own_requests.colour(b.owner, t);
    const double filled = std::clamp(double(b.fill) / std::max(snapshot_.block_size, 1), 0.0, 1.0);
    painter.fillRect(QRectF(box.left(), box.bottom() - box.height() * filled, box.width(),
                            box.height() * filled),
                     color);
    painter.setPen(QPen(color, 1.5));
  } else {
    painter.setPen(QPen(t.grid, 1));
  }
  painter.setBrush(Qt::NoBrush);
  painter.drawRect(box);

  const QFontMetricsF small(painter.font());
  if (b.ref_count > 1) {
    painter.setPen(QPen(t.text, std::max<qreal>(2.0, inset)));
    painter.drawRect(box.adjusted(1, 1, -1, -1));
    if (box.width() > small.horizontalAdvance(QStringLiteral("x88")) + 6) {
      const QString refs = QStringLiteral("x%1").arg(b.ref_count);
      const QRectF tag(box.left() + 3, box.bottom() - 3 - small.height(),
                       small.horizontalAdvance(refs) + 4, small.height());
      painter.fillRect(tag, t.background);
      painter.setPen(t.text);
      painter.drawText(tag, Qt::AlignCenter, refs);
    }
  }
  const double strength = event_strength(b);
  if (strength > 0.0) {
    QColor ring = event_colour(t);
    ring.setAlphaF(float(0.25 + 0.75 * strength));
    painter.setPen(QPen(ring, std::max<qreal>(2.5, inset * 1.2)));
    painter.drawRect(cell.adjusted(1, 1, -1, -1));
    if (box.width() > letter_cell_width(small)) {
      // The letter in the text colour on a background disc ringed in the event colour: 7:1
      // whatever the request's colour under it.
      const qreal d = small.height() * 1.1;
      const QRectF badge(box.right() - d - 1, box.top() + 1, d, d);
      painter.setPen(QPen(ring, 2));
      painter.setBrush(t.background);
      painter.drawEllipse(badge);
      painter.setPen(t.text);
      painter.drawText(badge, Qt::AlignCenter, event_letter(b.last_event));
      painter.setBrush(Qt::NoBrush);
    }
  }
}

void KvCachePanel::paint_formula_chart(QPainter& painter, const QRectF& area) {
  const Theme& t = theme();
  qreal top = area.top() +
              chart::draw_heading(painter, area, tr("KV bytes allocated against tokens held"), t);
  if (snapshot_.model.layers <= 0 || bytes_per_token() <= 0) {
    chart::draw_note(painter, QRectF(area.left(), top, area.width(), area.bottom() - top),
                     tr("The model's KV shape is not known yet."), t);
    return;
  }
  painter.setPen(t.text);
  const QString formula = formula_text();
  const QRectF formula_box = painter.boundingRect(
      QRectF(area.left(), top, area.width(), area.height()), Qt::TextWordWrap, formula);
  painter.drawText(QRectF(area.left(), top, area.width(), formula_box.height()), Qt::TextWordWrap,
                   formula);
  add_tooltip(formula_box,
              tr("Every token keeps one key and one value vector per layer and KV head; the "
                 "cache hands out memory in blocks, so a request's last block is partly empty."));
  top += formula_box.height() + 4;
  const QString chart_id = QStringLiteral("retained-bytes");
  const QString measured = QStringLiteral("measured");
  const QString exact = QStringLiteral("formula, exact");
  const QString blocks = QStringLiteral("formula, whole blocks");
  top += draw_series_legend(
      painter, QRectF(area.left(), top, area.width(), area.height()), chart_id,
      {{.label = tr("measured"), .color = t.series(4), .series = measured},
       {.label = tr("formula, exact"),
        .color = t.muted_text,
        .line = Qt::DashLine,
        .series = exact},
       {.label = explained_ ? tr("formula, whole blocks (one request)") : tr("whole blocks"),
        .color = t.text,
        .line = Qt::SolidLine,
        .series = blocks}});

  int64_t max_tokens = int64_t(snapshot_.block_size) * 4;
  double max_bytes = 0.0;
  for (const KvPoint& p : snapshot_.history) {
    max_tokens = std::max(max_tokens, p.retained_tokens);
    max_bytes = std::max(max_bytes, p.allocated_bytes);
  }
  const chart::Range full_x = chart::nice_range(0.0, double(max_tokens), 6, true);
  const chart::Range x = x_window(chart_id, full_x, 4.0);
  max_bytes = std::max(max_bytes, formula_bytes(int64_t(full_x.max)));
  const units::ByteUnit unit = chart::byte_unit(max_bytes);
  const double divisor = unit.bytes();
  chart::AxesSpec spec;
  spec.x_label = tr("tokens held in the cache");
  spec.y_label = tr("allocated (%1)").arg(chart::unit_name(unit));
  spec.x = x;
  spec.y = chart::nice_range(0.0, max_bytes / divisor, 5);
  spec.integer_x = true;
  const chart::Frame frame = chart::draw_axes(
      painter, QRectF(area.left(), top, area.width(), area.bottom() - top), spec, t);

  painter.save();
  // Zoomed in, the lines run past the plot's ends: cut there, the dots a little outside.
  painter.setClipRect(frame.plot().adjusted(0, -5, 0, 5));
  painter.setBrush(Qt::NoBrush);
  const double end = full_x.max;
  if (!series_hidden(chart_id, exact)) {
    painter.setPen(QPen(t.muted_text, 1.5, Qt::DashLine));
    painter.drawLine(frame.point(0, 0), frame.point(end, bytes_per_token() * end / divisor));
  }
  // Whole blocks: a step up at every block boundary.
  QPainterPath stairs(frame.point(0, 0));
  const int64_t block = std::max<int32_t>(snapshot_.block_size, 1);
  for (int64_t tokens = 0; tokens < int64_t(end); tokens += block) {
    const double bytes = formula_bytes(tokens + 1) / divisor;
    stairs.lineTo(frame.point(double(tokens), bytes));
    stairs.lineTo(frame.point(double(std::min<int64_t>(tokens + block, int64_t(end))), bytes));
  }
  painter.setPen(QPen(t.text, 1.5));
  if (!series_hidden(chart_id, blocks)) painter.drawPath(stairs);
  const bool dots = !series_hidden(chart_id, measured);
  painter.setPen(QPen(t.series(4).darker(120), 1));
  painter.setBrush(t.series(4));
  std::vector<std::pair<QPointF, QString>> values;
  for (const KvPoint& p : snapshot_.history) {
    if (!dots) break;
    const QPointF at = frame.point(double(p.retained_tokens), p.allocated_bytes / divisor);
    painter.drawEllipse(at, 3.5, 3.5);
    values.emplace_back(at, tr("%1 tokens held: %2 allocated (the formula for one request: %3)")
                                .arg(p.retained_tokens)
                                .arg(chart::format_bytes(p.allocated_bytes),
                                     chart::format_bytes(formula_bytes(p.retained_tokens))));
  }
  if (dots && !snapshot_.history.empty()) {
    const KvPoint& now = snapshot_.history.back();
    painter.setBrush(Qt::NoBrush);
    painter.setPen(QPen(t.highlight, 2.5));
    painter.drawEllipse(frame.point(double(now.retained_tokens), now.allocated_bytes / divisor), 7,
                        7);
  }
  painter.restore();
  mark_zoomable(painter, chart_id, frame.plot());
  add_tooltip(
      frame.plot(),
      tr("Dots: bytes of the blocks held against tokens held, as measured; lines: the formula "
         "above. Several requests each round up their own last block."));
  add_point_tooltips(std::move(values));
}

void KvCachePanel::paint_layers(QPainter& painter, const QRectF& area) {
  const Theme& t = theme();
  qreal top = area.top() + chart::draw_heading(painter, area, tr("K and V bytes per layer"), t);
  if (snapshot_.layers.empty()) {
    chart::draw_note(painter, QRectF(area.left(), top, area.width(), area.bottom() - top),
                     tr("Per-layer bytes not reported yet."), t);
    return;
  }
  const QColor k_color = t.series(4);
  const QColor v_color = t.series(2);
  const QString keys = QStringLiteral("K");
  const QString values = QStringLiteral("V");
  top += draw_series_legend(painter, QRectF(area.left(), top, area.width(), area.height()),
                            QStringLiteral("layers"),
                            {{.label = tr("K (keys)"), .color = k_color, .series = keys},
                             {.label = tr("V (values)"), .color = v_color, .series = values}});
  const bool show_k = !series_hidden(QStringLiteral("layers"), keys);
  const bool show_v = !series_hidden(QStringLiteral("layers"), values);
  double max_bytes = 0.0;
  for (const KvLayerBytes& l : snapshot_.layers)
    max_bytes = std::max({max_bytes, l.k_bytes, l.v_bytes});
  const units::ByteUnit unit = chart::byte_unit(max_bytes);
  const double divisor = unit.bytes();
  const int n = static_cast<int>(snapshot_.layers.size());
  chart::AxesSpec spec;
  spec.x_label = tr("layer");
  spec.y_label = chart::unit_name(unit);
  spec.x = {-0.5, n - 0.5};
  spec.y = chart::nice_range(0.0, max_bytes / divisor, 3);
  spec.y_ticks = 3;
  spec.integer_x = true;
  spec.x_ticks = std::min(n, 16);
  const chart::Frame frame = chart::draw_axes(
      painter, QRectF(area.left(), top, area.width(), area.bottom() - top), spec, t);
  const qreal slot = frame.plot().width() / n;
  const qreal bar = std::max<qreal>(slot * 0.36, 1.0);
  for (int i = 0; i < n; ++i) {
    const KvLayerBytes& l = snapshot_.layers[size_t(i)];
    const qreal center = frame.x(i);
    const qreal base = frame.y(0);
    const qreal k_top = frame.y(l.k_bytes / divisor);
    const qreal v_top = frame.y(l.v_bytes / divisor);
    if (show_k) painter.fillRect(QRectF(center - bar, k_top, bar, base - k_top), k_color);
    if (show_v) painter.fillRect(QRectF(center, v_top, bar, base - v_top), v_color);
    add_tooltip(QRectF(center - slot / 2, frame.plot().top(), slot, frame.plot().height()),
                tr("Layer %1 holds %2 of keys and %3 of values for the tokens in the cache.")
                    .arg(i)
                    .arg(chart::format_bytes(l.k_bytes), chart::format_bytes(l.v_bytes)));
  }
}

void KvCachePanel::paint_memory(QPainter& painter, const QRectF& area) {
  const Theme& t = theme();
  const DeviceMemory& m = snapshot_.memory;
  qreal top =
      area.top() + chart::draw_heading(painter, area,
                                       m.device.isEmpty() ? tr("Device memory")
                                                          : tr("Device memory: %1").arg(m.device),
                                       t);
  const double used = m.weights_bytes + m.kv_cache_bytes + m.working_bytes;
  if (used <= 0.0) {
    chart::draw_note(painter, QRectF(area.left(), top, area.width(), area.bottom() - top),
                     tr("Memory use not reported yet."), t);
    return;
  }
  // The bar shows what ServeScope uses, split by purpose; the thin bar under it puts that next
  // to the capacity, which on most devices dwarfs a small model.
  const auto segments = memory_segments();
  const QColor colors[] = {t.series(4), t.series(0), t.series(6)};
  const QString tips[] = {tr("Bytes of the model's weights on this device."),
                          tr("Bytes reserved for the KV block pool, in use or not."),
                          tr("Activations, scratch and staging buffers the backend allocated.")};
  const QFontMetricsF metrics(painter.font());
  const QRectF bar(area.left(), top, area.width(), metrics.height() * 1.5);
  qreal x = bar.left();
  std::vector<chart::LegendEntry> entries;
  for (size_t i = 0; i < 3; ++i) {
    const qreal w =
        segments[i].second <= 0 ? 0 : std::max<qreal>(bar.width() * segments[i].second / used, 2.0);
    const QRectF piece(x, bar.top(), std::min(w, bar.right() - x), bar.height());
    painter.fillRect(piece, colors[i]);
    add_tooltip(piece, tips[i]);
    x += piece.width();
    entries.push_back(
        {tr("%1 %2").arg(segments[i].first, chart::format_bytes(segments[i].second)), colors[i]});
  }
  top = bar.bottom() + 4;
  top += chart::draw_legend(painter, QRectF(area.left(), top, area.width(), area.bottom() - top),
                            entries, t) +
         2;

  painter.setPen(t.muted_text);
  if (m.capacity_bytes <= 0) {
    painter.drawText(QRectF(area.left(), top, area.width(), metrics.height()), Qt::AlignLeft,
                     tr("capacity not reported by this backend"));
    return;
  }
  const QRectF capacity(area.left(), top, area.width(), metrics.height() * 0.6);
  if (capacity.bottom() + 3 + metrics.height() > area.bottom()) return;  // no room for it
  painter.fillRect(capacity, t.surface);
  painter.fillRect(
      QRectF(capacity.left(), capacity.top(),
             std::max<qreal>(2.0, capacity.width() * std::min(1.0, used / m.capacity_bytes)),
             capacity.height()),
      t.text);
  painter.setBrush(Qt::NoBrush);
  painter.setPen(QPen(t.muted_text, 1));
  painter.drawRect(capacity);
  add_tooltip(capacity, tr("The share of the device's memory that ServeScope uses."));
  painter.setPen(t.text);
  painter.drawText(QRectF(area.left(), capacity.bottom() + 3, area.width(), metrics.height()),
                   Qt::AlignLeft,
                   tr("in use %1 of %2 capacity (%3%)")
                       .arg(chart::format_bytes(used), chart::format_bytes(m.capacity_bytes),
                            chart::format_number(100.0 * used / m.capacity_bytes, 2)));
}

}  // namespace servescope::widgets
