// PanelView's chart interaction: legend toggles, zoom and pan along x, and their mouse and key
// events (the hover layer answers tooltips in panel_view.cpp).
#include <QFontMetricsF>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>
#include <cmath>

#include "widgets/panel_view.h"
#include "widgets/theme.h"

namespace servescope::widgets {

namespace {

QString series_key(const chart::LegendEntry& entry) {
  return entry.series.isEmpty() ? entry.label : entry.series;
}

// How much one wheel notch (120 eighths of a degree) narrows the window.
constexpr double kZoomPerNotch = 0.8;

}  // namespace

bool PanelView::series_hidden(const QString& chart, const QString& series) const {
  return hidden_series_.contains({chart, series});
}

void PanelView::toggle_series(const QString& chart, const QString& series) {
  if (!hidden_series_.erase({chart, series})) hidden_series_.insert({chart, series});
  update();
}

std::optional<QRectF> PanelView::legend_entry(const QString& chart, const QString& series) const {
  for (const LegendHit& hit : legend_hits_) {
    if (hit.chart == chart && hit.series == series) return hit.box;
  }
  return std::nullopt;
}

std::optional<std::pair<QString, QString>> PanelView::legend_entry_at(QPointF pos) const {
  for (const LegendHit& hit : legend_hits_) {
    if (hit.box.contains(pos)) return std::pair{hit.chart, hit.series};
  }
  return std::nullopt;
}

bool PanelView::toggle_legend_entry_at(QPointF pos) {
  const auto entry = legend_entry_at(pos);
  if (entry) toggle_series(entry->first, entry->second);
  return entry.has_value();
}

qreal PanelView::draw_series_legend(QPainter& painter, const QRectF& area, const QString& chart,
                                    std::vector<chart::LegendEntry> entries) {
  for (chart::LegendEntry& entry : entries) entry.hidden = series_hidden(chart, series_key(entry));
  const std::vector<QRectF> boxes =
      chart::legend_boxes(QFontMetricsF(painter.font()), area, entries);
  for (size_t i = 0; i < entries.size(); ++i) {
    legend_hits_.push_back({boxes[i], chart, series_key(entries[i])});
    add_tooltip(boxes[i], entries[i].hidden ? tr("%1: hidden; click to show it again.")
                                                  .arg(entries[i].label)
                                            : tr("%1: click to hide it, and again to show it.")
                                                  .arg(entries[i].label));
  }
  return chart::draw_legend(painter, area, entries, theme());
}

chart::Range PanelView::x_window(const QString& chart, chart::Range full, double min_span) {
  return windows_.window(chart, full, min_span);
}

void PanelView::mark_zoomable(QPainter& painter, const QString& chart, const QRectF& plot) {
  windows_.add_plot(chart, plot);
  if (!windows_.zoomed(chart)) return;
  // Says the axis is a part of the whole, and how to see all of it.
  painter.save();
  painter.setFont(chart::small_font(font()));
  const QString note = tr("zoomed: double-click for all");
  const QFontMetricsF metrics(painter.font());
  const QRectF box(plot.right() - metrics.horizontalAdvance(note) - 8, plot.top() + 2,
                   metrics.horizontalAdvance(note) + 6, metrics.height());
  const Theme& t = theme();
  painter.fillRect(box, t.background);
  painter.setPen(t.muted_text);
  painter.drawText(box, Qt::AlignCenter, note);
  painter.restore();
  add_tooltip(box, tr("The x axis shows part of the data: Ctrl+wheel zooms, a drag moves it, a "
                      "double-click, 0 or Home (or Reset zoom in the context menu) shows all."));
}

void PanelView::reset_zoom() {
  windows_.reset();
  update();
}

void PanelView::reset_view() {
  hidden_series_.clear();
  reset_zoom();
}

void PanelView::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return QWidget::mousePressEvent(event);
  if (toggle_legend_entry_at(event->position())) return event->accept();
  const QString chart = windows_.chart_at(event->position());
  if (chart.isEmpty() || !windows_.zoomed(chart)) return QWidget::mousePressEvent(event);
  dragging_ = chart;
  drag_x_ = event->position().x();
  setCursor(Qt::ClosedHandCursor);
  event->accept();
}

void PanelView::mouseMoveEvent(QMouseEvent* event) {
  const QPointF pos = event->position();
  if (!dragging_.isEmpty() && (event->buttons() & Qt::LeftButton)) {
    if (windows_.pan(dragging_, pos.x() - drag_x_)) update();
    drag_x_ = pos.x();
    return event->accept();
  }
  // The cursor says what a click does here.
  if (legend_entry_at(pos))
    setCursor(Qt::PointingHandCursor);
  else if (windows_.zoomed(windows_.chart_at(pos)))
    setCursor(Qt::OpenHandCursor);
  else
    unsetCursor();
  QWidget::mouseMoveEvent(event);
}

void PanelView::mouseReleaseEvent(QMouseEvent* event) {
  if (event->button() == Qt::LeftButton && !dragging_.isEmpty()) {
    dragging_.clear();
    unsetCursor();
    return event->accept();
  }
  QWidget::mouseReleaseEvent(event);
}

void PanelView::mouseDoubleClickEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return QWidget::mouseDoubleClickEvent(event);
  // Fast clicks on a legend entry each toggle it.
  if (toggle_legend_entry_at(event->position())) return event->accept();
  if (!windows_.any_zoomed()) return QWidget::mouseDoubleClickEvent(event);
  reset_zoom();
  event->accept();
}

void PanelView::wheelEvent(QWheelEvent* event) {
  // Ctrl+wheel only: a plain wheel stays the scroll of the page or list around the panel.
  const int notches = event->angleDelta().y();
  if (!(event->modifiers() & Qt::ControlModifier) || notches == 0)
    return QWidget::wheelEvent(event);
  if (!windows_.zoom_at(event->position(), std::pow(kZoomPerNotch, notches / 120.0)))
    return QWidget::wheelEvent(event);
  update();
  event->accept();
}

void PanelView::keyPressEvent(QKeyEvent* event) {
  // Only while something is zoomed, and only the bare keys: otherwise the keys go on to the
  // window (Ctrl+0 is the font's, Home a page's).
  const bool reset_key = event->key() == Qt::Key_0 || event->key() == Qt::Key_Home;
  const auto modifiers = event->modifiers() & ~Qt::KeypadModifier;
  if (!reset_key || modifiers != Qt::NoModifier || !windows_.any_zoomed())
    return QWidget::keyPressEvent(event);
  reset_zoom();
  event->accept();
}

}  // namespace servescope::widgets
