#include "widgets/attention_panel.h"

#include <QHBoxLayout>
#include <QImage>
#include <QLabel>
#include <QPaintEngine>
#include <QPainter>
#include <QPainterPath>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <array>
#include <cmath>

#include "widgets/chart_painting.h"
#include "widgets/label_layout.h"
#include "widgets/theme.h"
#include "widgets/themed_controls.h"
#include "widgets/token_text.h"

namespace servescope::widgets {
namespace {

// Viridis (matplotlib's default), sampled at nine even stops and interpolated in RGB.
constexpr std::array<QRgb, 9> kViridis = {0x440154, 0x472D7B, 0x3B528B, 0x2C728E, 0x21918C,
                                          0x28AE80, 0x5EC962, 0xADDC30, 0xFDE725};

int64_t key_count(const AttentionSnapshot& s) { return static_cast<int64_t>(s.key_pieces.size()); }
int64_t query_count(const AttentionSnapshot& s) {
  return static_cast<int64_t>(s.query_pieces.size());
}

// The longest label painted on an axis, in characters; longer pieces are elided.
constexpr int kMaxLabelChars = 12;

constexpr QSize kMinimumSize(360, 260);

}  // namespace

bool attention_visible(const AttentionSnapshot& snapshot, int64_t query, int64_t key) {
  return key >= 0 && key < key_count(snapshot) && key <= snapshot.first_query_position + query;
}

int64_t visible_cell_count(const AttentionSnapshot& snapshot) {
  int64_t count = 0;
  for (int64_t q = 0; q < query_count(snapshot); ++q) {
    count += std::clamp<int64_t>(snapshot.first_query_position + q + 1, 0, key_count(snapshot));
  }
  return count;
}

bool attention_shape_valid(const AttentionSnapshot& snapshot) {
  return !snapshot.key_pieces.empty() && !snapshot.query_pieces.empty() &&
         static_cast<int64_t>(snapshot.weights.size()) ==
             query_count(snapshot) * key_count(snapshot);
}

QColor viridis(double t) {
  const double x = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0) * (kViridis.size() - 1);
  const size_t i = std::min(static_cast<size_t>(x), kViridis.size() - 2);
  const double f = x - static_cast<double>(i);
  const QColor a(kViridis[i]);
  const QColor b(kViridis[i + 1]);
  return QColor::fromRgbF(static_cast<float>(a.redF() + f * (b.redF() - a.redF())),
                          static_cast<float>(a.greenF() + f * (b.greenF() - a.greenF())),
                          static_cast<float>(a.blueF() + f * (b.blueF() - a.blueF())));
}

AttentionPanel::AttentionPanel(QWidget* parent) : PanelView(parent) {
  layer_box_ = new QSpinBox(this);
  head_box_ = new QSpinBox(this);
  layer_count_label_ = new QLabel(this);
  head_count_label_ = new QLabel(this);
  layer_box_->setToolTip(tr("The transformer layer whose attention is shown (0 = first)."));
  head_box_->setToolTip(tr("The query head within the layer whose attention is shown."));
  auto* controls = new QHBoxLayout;
  auto* layer_label = new QLabel(tr("Layer"), this);
  layer_label->setBuddy(layer_box_);  // names the box for a screen reader
  controls->addWidget(layer_label);
  controls->addWidget(layer_box_);
  controls->addWidget(layer_count_label_);
  controls->addSpacing(16);
  auto* head_label = new QLabel(tr("Head"), this);
  head_label->setBuddy(head_box_);
  controls->addWidget(head_label);
  controls->addWidget(head_box_);
  controls->addWidget(head_count_label_);
  controls->addStretch(1);
  auto* column = new QVBoxLayout(this);
  column->setSizeConstraint(QLayout::SetNoConstraint);  // minimumSizeHint() says the minimum
  column->setContentsMargins(8, 6, 8, 6);
  column->addLayout(controls);
  column->addStretch(1);
  const auto emit_selection = [this] {
    emit selection_changed(layer_box_->value(), head_box_->value());
  };
  connect(layer_box_, &QSpinBox::valueChanged, this, emit_selection);
  connect(head_box_, &QSpinBox::valueChanged, this, emit_selection);
  set_snapshot({});
}

void AttentionPanel::set_snapshot(AttentionSnapshot snapshot) {
  snapshot_ = std::move(snapshot);
  // The app's answer must not echo back as another request.
  const QSignalBlocker block_layer(layer_box_);
  const QSignalBlocker block_head(head_box_);
  layer_box_->setRange(0, std::max(0, snapshot_.layer_count - 1));
  head_box_->setRange(0, std::max(0, snapshot_.head_count - 1));
  layer_box_->setValue(snapshot_.layer);
  head_box_->setValue(snapshot_.head);
  layer_box_->setEnabled(snapshot_.layer_count > 1);
  head_box_->setEnabled(snapshot_.head_count > 1);
  layer_count_label_->setText(tr("of %1").arg(snapshot_.layer_count));
  head_count_label_->setText(tr("of %1").arg(snapshot_.head_count));
  update();
}

QString AttentionPanel::title() const { return tr("Attention"); }

QString AttentionPanel::query_axis_title() const {
  return query_count(snapshot_) == 1 ? tr("query") : tr("query: this step's tokens");
}

QSize AttentionPanel::minimumSizeHint() const { return kMinimumSize; }

void AttentionPanel::resizeEvent(QResizeEvent* event) {
  // Too small for the map: the selectors give way to the message asking for room.
  show_controls(*this, width() >= kMinimumSize.width() && height() >= kMinimumSize.height());
  PanelView::resizeEvent(event);
}

QString AttentionPanel::csv() const {
  QString out = QStringLiteral(
      "layer,head,query_row,query_position,query_piece,key_position,key_piece,weight\n");
  if (!attention_shape_valid(snapshot_)) return out;
  const int64_t keys = key_count(snapshot_);
  for (int64_t q = 0; q < query_count(snapshot_); ++q) {
    for (int64_t k = 0; k < keys; ++k) {
      if (!attention_visible(snapshot_, q, k)) continue;
      out += QStringLiteral("%1,%2,%3,%4,%5,%6,%7,%8\n")
                 .arg(snapshot_.layer)
                 .arg(snapshot_.head)
                 .arg(q)
                 .arg(snapshot_.first_query_position + q)
                 .arg(csv_field(snapshot_.query_pieces[q]))
                 .arg(k)
                 .arg(csv_field(snapshot_.key_pieces[k]))
                 .arg(static_cast<double>(snapshot_.weights[q * keys + k]), 0, 'g', 7);
    }
  }
  return out;
}

float AttentionPanel::colour_scale_max() const {
  float top = 0.0f;
  if (!attention_shape_valid(snapshot_)) return 1.0f;
  const int64_t keys = key_count(snapshot_);
  for (int64_t q = 0; q < query_count(snapshot_); ++q) {
    for (int64_t k = 0; k < keys; ++k) {
      const float w = snapshot_.weights[q * keys + k];
      if (attention_visible(snapshot_, q, k) && std::isfinite(w)) top = std::max(top, w);
    }
  }
  return top > 0.0f ? top : 1.0f;
}

std::optional<std::pair<int, int>> AttentionPanel::cell_at(QPointF pos) const {
  if (cell_width_ <= 0.0 || cell_height_ <= 0.0 || !attention_shape_valid(snapshot_)) {
    return std::nullopt;
  }
  const QPointF local = pos - grid_origin_;
  if (local.x() < 0 || local.y() < 0) return std::nullopt;
  const auto column = static_cast<int64_t>(local.x() / cell_width_);
  const auto row = static_cast<int64_t>(local.y() / cell_height_);
  if (row >= query_count(snapshot_) || column >= key_count(snapshot_)) return std::nullopt;
  return std::make_pair(static_cast<int>(row), static_cast<int>(column));
}

QString AttentionPanel::cell_tooltip(QPointF pos) const {
  const auto cell = cell_at(pos);
  if (!cell) return {};
  const auto [q, k] = *cell;
  const QString query = printable_piece(snapshot_.query_pieces[q]);
  const QString key = printable_piece(snapshot_.key_pieces[k]);
  const int64_t query_position = snapshot_.first_query_position + q;
  if (!attention_visible(snapshot_, q, k)) {
    return tr("query '%1' (position %2) cannot see key '%3' (position %4): it comes later, so "
              "the causal mask hides it")
        .arg(query)
        .arg(query_position)
        .arg(key)
        .arg(k);
  }
  const double weight = snapshot_.weights[q * key_count(snapshot_) + k];
  return tr("query '%1' (position %2) -> key '%3' (position %4): weight %5")
      .arg(query)
      .arg(query_position)
      .arg(key)
      .arg(k)
      .arg(weight, 0, 'f', 4);
}

void AttentionPanel::paintEvent(QPaintEvent*) {
  apply_theme_palette(*this);  // the selectors and their captions
  QPainter painter(this);
  clear_tooltips();
  painted_visible_ = 0;
  painted_masked_ = 0;
  cell_width_ = cell_height_ = 0.0;
  if (paint_if_too_small(painter, kMinimumSize)) return;
  const Theme& t = theme();
  painter.fillRect(rect(), t.background);
  painter.setFont(font());
  const QFontMetricsF fm(font());
  const double line = fm.height();
  const double top = layer_box_->geometry().bottom() + 6;
  const QString heading =
      tr("Attention weights of layer %1, head %2 in the last step: each row sums to 1")
          .arg(snapshot_.layer)
          .arg(snapshot_.head);
  const QRectF heading_area(8, top, width() - 16, line * 1.4);
  chart::draw_heading(painter, heading_area,
                      QFontMetricsF(chart::heading_font(font()))
                          .elidedText(heading, Qt::ElideRight, heading_area.width()),
                      t);
  const QRectF body(8, heading_area.bottom() + 4, width() - 16,
                    height() - heading_area.bottom() - 10);
  if (!attention_shape_valid(snapshot_)) {
    chart::draw_note(painter, body, tr("No data yet: press Generate"), t);
    return;
  }

  // Room for labels: query pieces on the left, key pieces rotated under the grid, the colour
  // legend on the right.
  const QString sample = QString(kMaxLabelChars, QLatin1Char('M'));
  const double label_room = std::min(fm.horizontalAdvance(sample) * 0.75, body.width() * 0.2);
  const double legend_room =
      std::min(fm.horizontalAdvance(tr("masked (future)")) + line * 2.5, body.width() * 0.3);
  const double bottom_room = std::min(label_room + line * 1.6, body.height() * 0.4);
  const int64_t queries = query_count(snapshot_);
  const int64_t keys = key_count(snapshot_);
  // Cells as large as fit, up to three lines of text, and never more than twice as wide as
  // high or the other way round, except a decode step's single row: a strip a line high, so
  // a long context's row stays visible from the back of a lecture hall.
  const auto grid_room_from = [&](double left) {
    const QRectF room(QPointF(left, body.top()),
                      QPointF(body.right() - legend_room, body.bottom() - bottom_room));
    cell_width_ = std::min(room.width() / static_cast<double>(keys), line * 3.0);
    cell_height_ = std::min(room.height() / static_cast<double>(queries), line * 3.0);
    cell_width_ = std::min(cell_width_, 2.0 * cell_height_);
    cell_height_ = std::min(cell_height_, std::max(2.0 * cell_width_, queries == 1 ? line : 0.0));
    return room;
  };
  QRectF grid_room = grid_room_from(body.left() + line * 1.4 + label_room);
  // A grid lower than the query axis' title gets the title level, left of the query labels.
  query_title_level_ =
      cell_height_ * static_cast<double>(queries) < fm.horizontalAdvance(query_axis_title());
  if (query_title_level_) {
    grid_room = grid_room_from(body.left() + fm.horizontalAdvance(query_axis_title()) +
                               line * 0.5 + label_room);
  }
  if (cell_width_ <= 0.0 || cell_height_ <= 0.0) return;
  grid_origin_ = grid_room.topLeft();
  const QRectF grid(grid_origin_, QSizeF(cell_width_ * static_cast<double>(keys),
                                         cell_height_ * static_cast<double>(queries)));
  mark_element(QStringLiteral("weights"), grid);

  const float scale_max = colour_scale_max();
  // On screen and in PNGs the cells are one pixel each of an image scaled up without
  // smoothing: crisp, and thousands of cells cost one draw. SVG gets a rectangle per cell so
  // it stays sharp at any zoom.
  const bool vector_cells =
      painter.paintEngine() != nullptr && painter.paintEngine()->type() == QPaintEngine::SVG;
  QImage cells(static_cast<int>(keys), static_cast<int>(queries), QImage::Format_ARGB32);
  cells.fill(Qt::transparent);
  QPainterPath masked;  // per row, the keys after the query's own position
  for (int64_t q = 0; q < queries; ++q) {
    const int64_t visible_end =
        std::clamp<int64_t>(snapshot_.first_query_position + q + 1, 0, keys);
    const double row_top = grid.top() + static_cast<double>(q) * cell_height_;
    auto* row = reinterpret_cast<QRgb*>(cells.scanLine(static_cast<int>(q)));
    for (int64_t k = 0; k < visible_end; ++k) {
      const float w = snapshot_.weights[q * keys + k];
      const QColor colour = viridis(static_cast<double>(w / scale_max));
      if (vector_cells) {
        // Overlapping by half a pixel so no seams show between cells.
        painter.fillRect(QRectF(grid.left() + static_cast<double>(k) * cell_width_, row_top,
                                cell_width_ + 0.5, cell_height_ + 0.5),
                         colour);
      } else {
        row[k] = colour.rgb();
      }
    }
    painted_visible_ += visible_end;
    if (visible_end < keys) {
      const double masked_left = grid.left() + static_cast<double>(visible_end) * cell_width_;
      masked.addRect(QRectF(masked_left, row_top, grid.right() - masked_left, cell_height_));
      painted_masked_ += keys - visible_end;
    }
  }
  if (!vector_cells) {
    painter.setRenderHint(QPainter::SmoothPixmapTransform, false);
    painter.drawImage(grid, cells);
  }
  masked.setFillRule(Qt::WindingFill);
  painter.fillPath(masked, t.surface);
  painter.fillPath(masked, QBrush(t.muted_text, Qt::BDiagPattern));
  painter.setPen(QPen(t.muted_text, 1));
  painter.setBrush(Qt::NoBrush);
  painter.drawRect(grid);
  paint_labels(painter);
  paint_colour_legend(painter, QRectF(QPointF(grid.right() + line, grid_room.top()),
                                      QPointF(body.right(), body.bottom())));
  // A cell's weight, described while the mouse stays on that cell.
  add_tooltip([this](QPointF pos) -> std::optional<HoverHit> {
    const auto cell = cell_at(pos);
    if (!cell) return std::nullopt;
    const QRectF box(grid_origin_.x() + cell->second * cell_width_,
                     grid_origin_.y() + cell->first * cell_height_, cell_width_, cell_height_);
    return HoverHit{cell_tooltip(pos), box};
  });
}

double AttentionPanel::paint_labels(QPainter& painter) {
  const Theme& t = theme();
  QFont label_font = chart::small_font(font());
  painter.setFont(label_font);
  const QFontMetricsF fm(label_font);
  const double line = fm.height();
  const int64_t queries = query_count(snapshot_);
  const int64_t keys = key_count(snapshot_);
  const QString sample = QString(kMaxLabelChars, QLatin1Char('M'));
  const double label_width = fm.horizontalAdvance(sample) * 0.75;
  // Every n-th label when cells are smaller than a line of text.
  const auto row_stride =
      static_cast<int64_t>(std::max(1.0, std::ceil(line * 0.95 / cell_height_)));
  const auto column_stride =
      static_cast<int64_t>(std::max(1.0, std::ceil(line * 0.95 / cell_width_)));
  painter.setPen(t.text);
  // Inside the grid's height: the last row's label reached into the column labels below.
  for (const RowLabel& label :
       row_labels(queries, row_stride, grid_origin_.y(), cell_height_, line)) {
    const QRectF box(grid_origin_.x() - label_width - 6, label.centre - line / 2, label_width,
                     line);
    painter.drawText(box, Qt::AlignRight | Qt::AlignVCenter,
                     fm.elidedText(printable_piece(snapshot_.query_pieces[label.row]),
                                   Qt::ElideRight, label_width));
  }
  const double grid_bottom = grid_origin_.y() + cell_height_ * static_cast<double>(queries);
  double longest = 0.0;
  for (int64_t k = 0; k < keys; k += column_stride) {
    const QString text =
        fm.elidedText(printable_piece(snapshot_.key_pieces[k]), Qt::ElideRight, label_width);
    longest = std::max(longest, fm.horizontalAdvance(text));
    painter.save();
    painter.translate(grid_origin_.x() + static_cast<double>(k) * cell_width_ + cell_width_ / 2,
                      grid_bottom + 6);
    painter.rotate(-90);  // read bottom to top, ending at the column
    painter.drawText(QRectF(-label_width, -line / 2, label_width, line),
                     Qt::AlignRight | Qt::AlignVCenter, text);
    painter.restore();
  }

  // Axis titles with what the positions are.
  painter.setFont(font());
  const QFontMetricsF title_metrics(font());
  const double title_top = grid_bottom + longest + 12;
  const QString x_text = tr("key: cached token, positions 0 to %1").arg(keys - 1);
  const double available = width() - grid_origin_.x() - 8;
  const QRectF x_title(grid_origin_.x(), title_top,
                       std::min(available, title_metrics.horizontalAdvance(x_text) + 2),
                       title_metrics.height());
  painter.drawText(x_title, Qt::AlignLeft | Qt::AlignVCenter,
                   title_metrics.elidedText(x_text, Qt::ElideRight, x_title.width()));
  add_tooltip(x_title, tr("Keys: every token in the KV cache this step could attend to."));
  const double grid_height = cell_height_ * static_cast<double>(queries);
  const QString y_text = query_axis_title();
  if (query_title_level_) {
    painter.drawText(QRectF(8, grid_origin_.y() + grid_height / 2 - title_metrics.height() / 2,
                            title_metrics.horizontalAdvance(y_text), title_metrics.height()),
                     Qt::AlignLeft | Qt::AlignVCenter, y_text);
  } else {  // along the grid's side
    painter.save();
    painter.translate(8, grid_origin_.y() + grid_height / 2);
    painter.rotate(-90);
    painter.drawText(QRectF(-grid_height / 2, 0, grid_height, title_metrics.height()),
                     Qt::AlignHCenter | Qt::AlignTop, y_text);
    painter.restore();
  }
  add_tooltip(QRectF(0, grid_origin_.y(), grid_origin_.x(), grid_height),
              tr("Queries: the tokens this step computed; each row is one token's attention."));
  return x_title.bottom();
}

void AttentionPanel::paint_colour_legend(QPainter& painter, const QRectF& area) {
  const Theme& t = theme();
  painter.setFont(font());
  const QFontMetricsF fm(font());
  const double line = fm.height();
  if (area.width() < line * 2 || area.height() < line * 4) return;
  painter.setPen(t.text);
  painter.drawText(QRectF(area.left(), area.top(), area.width(), line),
                   Qt::AlignLeft | Qt::AlignVCenter,
                   fm.elidedText(tr("weight"), Qt::ElideRight, area.width()));
  // The bar starts a title line and half a tick label down: its top label is centred on it.
  const double bar_top = area.top() + line * 1.6;
  const double bar_height = std::min(area.height() - line * 4.7, line * 12);
  const QRectF bar(area.left(), bar_top, line * 0.9, std::max(bar_height, line));
  QLinearGradient gradient(bar.bottomLeft(), bar.topLeft());
  for (int i = 0; i <= 8; ++i) gradient.setColorAt(i / 8.0, viridis(i / 8.0));
  painter.fillRect(bar, gradient);
  painter.setPen(QPen(t.muted_text, 1));
  painter.drawRect(bar);
  const double top = colour_scale_max();
  for (const double f : {0.0, 0.5, 1.0}) {
    const double y = bar.bottom() - f * bar.height();
    painter.drawLine(QPointF(bar.right(), y), QPointF(bar.right() + 4, y));
    painter.setPen(t.text);
    painter.drawText(QRectF(bar.right() + 6, y - line / 2, area.width(), line),
                     Qt::AlignLeft | Qt::AlignVCenter, QString::number(f * top, 'g', 3));
    painter.setPen(QPen(t.muted_text, 1));
  }
  add_tooltip(bar.adjusted(0, 0, area.width() - bar.width(), 0),
              tr("Colour scale: the softmax weight a query gives a key, from 0 to the largest "
                 "weight shown."));
  const QRectF swatch(area.left(), bar.bottom() + line * 1.2, line * 0.9, line * 0.9);
  painter.fillRect(swatch, t.surface);
  painter.fillRect(swatch, QBrush(t.muted_text, Qt::BDiagPattern));
  painter.drawRect(swatch);
  painter.setPen(t.text);
  const QRectF masked_text(swatch.right() + 6, swatch.top() - line * 0.05,
                           area.right() - swatch.right() - 6, line);
  painter.drawText(masked_text, Qt::AlignLeft | Qt::AlignVCenter,
                   fm.elidedText(tr("masked (future)"), Qt::ElideRight, masked_text.width()));
  add_tooltip(swatch.united(masked_text),
              tr("Causal mask: a token may not attend to tokens after it, so these cells have "
                 "no weight."));
}

}  // namespace servescope::widgets
