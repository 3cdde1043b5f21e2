// Base of every panel: a widget that paints a plain snapshot and can save itself as PNG or SVG
// and export its data as CSV (context menu). Panels paint in logical coordinates with the
// widget's font(), so the app's font scaling and high-DPI screens need nothing extra.
#pragma once

#include <QPainterPath>
#include <QRectF>
#include <QString>
#include <QWidget>
#include <utility>
#include <vector>

#include "widgets/highlight_halo.h"

class QMenu;
class QPainter;

namespace servescope::widgets {

class PanelView : public QWidget {
  Q_OBJECT

 public:
  explicit PanelView(QWidget* parent = nullptr);

  virtual QString title() const = 0;
  // The panel's current data as CSV: a header row, then one row per item; empty data gives
  // the header alone.
  virtual QString csv() const = 0;

  bool save_png(const QString& path);  // grab() at the screen's device pixel ratio
  bool save_svg(const QString& path);  // vector copy through QSvgGenerator
  bool save_csv(const QString& path) const;

  // The context menu ("Save as PNG...", "Save as SVG...", "Export data as CSV..."); the caller
  // owns it. Public so tests and the app's menus can reuse the same actions.
  QMenu* make_context_menu(QWidget* parent);

  // The one-sentence explanation of the metric painted at `pos` in the last paint, or empty:
  // a registered area's text, else computed_tooltip(pos).
  QString tooltip_at(QPointF pos) const;
  // The area that tooltip describes: it hides when the mouse leaves it.
  QRect tooltip_region(QPointF pos) const;
  // Plain tooltip text as the tooltip shows it: rich text, so Qt wraps its long lines (a plain
  // one is a single line, 1,200 px wide for the sweep's) while its own line breaks stay.
  static QString wrapping_tooltip(const QString& text);

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

  // Tooltip areas and element shapes are registered while painting (they follow the layout);
  // paintEvent calls clear_tooltips() first, which forgets both. Later areas win where they
  // overlap.
  void clear_tooltips() {
    tooltips_.clear();
    elements_.clear();
  }
  // Registers (adds to) the shape of a highlightable element, as painted this time.
  void mark_element(const QString& element, const QPainterPath& shape);
  void mark_element(const QString& element, const QRectF& area);
  void add_tooltip(const QRectF& area, const QString& text) { tooltips_.emplace_back(area, text); }
  // For dense items (thousands of cells) a panel computes the text on hover from its last layout
  // instead of registering an area per item every frame.
  virtual QString computed_tooltip(QPointF pos) const;

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

  std::vector<std::pair<QRectF, QString>> tooltips_;
  ElementShape& element(const QString& name);  // registered this paint, created empty

  std::vector<std::pair<QString, ElementShape>> elements_;
  QString highlight_;
  QWidget* highlight_overlay_ = nullptr;  // a transparent child painted after the panel
};

}  // namespace servescope::widgets
