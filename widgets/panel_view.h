// Base of every panel: a widget that paints a plain snapshot and can save itself as PNG or SVG
// and export its data as CSV (context menu). Panels paint in logical coordinates with the
// widget's font(), so the app's font scaling and high-DPI screens need nothing extra.
//
// It owns the interaction users expect of a chart, registered by the panels while they paint:
// - hover: areas and hit tests with their texts (HoverLayer), the one way a panel shows a
//   tooltip;
// - legends whose entries hide and show their series when clicked (kept until reset_view());
// - zoom and pan along the x axis of the charts that paint a view window (ViewWindows):
//   Ctrl+wheel zooms around the mouse (a plain wheel stays the scroll of the page or list the
//   panel sits in), a drag pans, and a double-click, "Reset zoom" in the context menu, or 0 or
//   Home while the panel has the focus shows the whole range again.
#pragma once

#include <QPainterPath>
#include <QPointer>
#include <QRectF>
#include <QString>
#include <QWidget>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "widgets/chart_painting.h"
#include "widgets/highlight_halo.h"
#include "widgets/hover_layer.h"
#include "widgets/remote_view.h"
#include "widgets/view_window.h"

class QKeyEvent;
class QMenu;
class QMouseEvent;
class QPainter;
class QWheelEvent;

namespace servescope::widgets {

class PanelView : public QWidget {
  Q_OBJECT

 public:
  explicit PanelView(QWidget* parent = nullptr);

  virtual QString title() const = 0;
  // The panel's current data as CSV: a header row, then one row per item; empty data gives
  // the header alone.
  virtual QString csv() const = 0;

  // Remote mode (remote_view.h): while a view is set it is painted in place of the panel's
  // own snapshot, and "Export data as CSV" writes its figures; nullopt gives the panel back.
  void set_remote_view(std::optional<RemoteView> view);
  const std::optional<RemoteView>& remote_view() const { return remote_; }

  bool save_png(const QString& path);  // grab() at the screen's device pixel ratio
  bool save_svg(const QString& path);  // vector copy through QSvgGenerator
  bool save_csv(const QString& path) const;

  // The context menu ("Save as PNG...", "Save as SVG...", "Export data as CSV...", then
  // "Reset zoom" and "Show all series" where they apply); the caller owns it. Public so tests
  // and the app's menus can reuse the same actions.
  QMenu* make_context_menu(QWidget* parent);

  // The text of what is painted at `pos` in the last paint (a value, or the one-sentence
  // explanation of a metric), or empty.
  QString tooltip_at(QPointF pos) const { return hover_.text_at(pos); }
  // The area that tooltip describes: it hides when the mouse leaves it.
  QRect tooltip_region(QPointF pos) const { return hover_.region_at(pos); }
  // Plain tooltip text as the tooltip shows it: rich text, so Qt wraps its long lines (a plain
  // one is a single line, 1,200 px wide for the sweep's) while its own line breaks stay.
  static QString wrapping_tooltip(const QString& text) { return HoverLayer::wrapping(text); }

  // Legend toggles: whether `series` of chart `chart` is hidden, and where its legend entry was
  // painted last (widget coordinates). A click on the entry toggles it.
  bool series_hidden(const QString& chart, const QString& series) const;
  void toggle_series(const QString& chart, const QString& series);
  std::optional<QRectF> legend_entry(const QString& chart, const QString& series) const;

  // Zoom: the x range chart `chart` showed in the last paint and its plot; whether any chart
  // is zoomed.
  chart::Range shown_x_range(const QString& chart) const { return windows_.shown(chart); }
  QRectF zoomable_plot(const QString& chart) const { return windows_.plot(chart); }
  bool zoomed() const { return windows_.any_zoomed(); }
  void reset_zoom();
  // Forgets the user's view: zoom and hidden series (a new model, a new engine).
  void reset_view();

  // Emphasis for teaching: the named parts of the chart a lesson can point at ("memory-roof",
  // "blocks", ...). set_highlight() draws a marker-pen halo over that part, dims the rest, and
  // keeps doing so as the data changes; an empty name clears it; an unknown name is refused.
  virtual QStringList highlight_elements() const { return {}; }
  bool set_highlight(const QString& element);
  QString highlight() const { return highlight_; }
  // Where the element was painted last (widget coordinates), empty when it was not painted
  // (no data yet for it): as one path, and as the parts the panel registered.
  QPainterPath element_shape(const QString& element) const;
  ElementShape element_parts(const QString& element) const;

 protected:
  void contextMenuEvent(QContextMenuEvent* event) override;
  bool event(QEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;

  // Hover areas, legend entries, zoomable plots and element shapes are registered while
  // painting (they follow the layout); paintEvent calls clear_tooltips() first, which forgets
  // them all. Later hover registrations win where they overlap.
  void clear_tooltips();
  // Registers (adds to) the shape of a highlightable element, as painted this time.
  void mark_element(const QString& element, const QPainterPath& shape);
  void mark_element(const QString& element, const QRectF& area);
  void add_tooltip(const QRectF& area, const QString& text) { hover_.add(area, text); }
  // For dense items (thousands of cells) a hit test computes the text on hover from the last
  // layout instead of an area per item every frame.
  void add_tooltip(HoverLayer::HitTest test) { hover_.add(std::move(test)); }
  // Dots of a chart with their values, found within a few pixels.
  void add_point_tooltips(std::vector<std::pair<QPointF, QString>> points);

  // A legend whose entries hide and show the series of chart `chart` when clicked (hidden
  // ones dimmed and struck through); returns the height used, as chart::draw_legend.
  qreal draw_series_legend(QPainter& painter, const QRectF& area, const QString& chart,
                           std::vector<chart::LegendEntry> entries);
  // The x range zoomable chart `chart` paints of `full` (see ViewWindows::window), and, once
  // its axes are drawn, its plot: where wheel and drag act, with a note while zoomed.
  chart::Range x_window(const QString& chart, chart::Range full, double min_span);
  void mark_zoomable(QPainter& painter, const QString& chart, const QRectF& plot);

  // Fills the widget with the theme background and a centred message such as
  // "No data yet: press Generate".
  void paint_empty_state(QPainter& painter, const QString& message) const;
  // When the widget is smaller than `needed`, paints a message asking for more room instead of
  // a squeezed chart, and returns true.
  bool paint_if_too_small(QPainter& painter, QSize needed) const;
  // A one-line note on how the engine runs now ("Slow motion: times are real ..."), in the
  // warning colour at the top of `area`, with a tooltip; returns the height used (0 for none).
  qreal paint_pacing_note(QPainter& painter, const QRectF& area, const QString& note);

 private:
  void save_with_dialog(const QString& filter, const QString& suffix);
  // remote_view.cpp: the remote view over the whole panel, and its parts.
  void paint_remote_view();
  qreal paint_remote_chart(QPainter& painter, const QRectF& area, const RemoteChart& chart);
  void paint_remote_requests(QPainter& painter, const QRectF& area,
                             const std::vector<RemoteRequestRow>& rows);
  // The legend entry under `pos` in the last paint: (chart, series).
  std::optional<std::pair<QString, QString>> legend_entry_at(QPointF pos) const;
  bool toggle_legend_entry_at(QPointF pos);  // true when there was one

  HoverLayer hover_;
  struct LegendHit {
    QRectF box;
    QString chart, series;
  };
  std::vector<LegendHit> legend_hits_;
  std::set<std::pair<QString, QString>> hidden_series_;  // (chart, series)
  ViewWindows windows_;
  QString dragging_;  // the chart a drag pans, or empty
  qreal drag_x_ = 0.0;
  ElementShape& element(const QString& name);  // registered this paint, created empty

  std::vector<std::pair<QString, ElementShape>> elements_;
  QString highlight_;
  QWidget* highlight_overlay_ = nullptr;  // a transparent child painted after the panel
  std::optional<RemoteView> remote_;
  std::vector<QPointer<QWidget>> hidden_for_remote_;  // the panel's controls, back when it leaves
};

}  // namespace servescope::widgets
