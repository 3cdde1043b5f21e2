#include "widgets/panel_view.h"

#include <QContextMenuEvent>
#include <QFile>
#include <QFileDialog>
#include <QFontMetricsF>
#include <QHelpEvent>
#include <QMenu>
#include <QMessageBox>
#include <QPaintEngine>
#include <QPainter>
#include <QPixmap>
#include <QSvgGenerator>
#include <algorithm>

#include "widgets/theme.h"

namespace servescope::widgets {

namespace {

// Paints the parent panel's highlight over it. A child widget is painted after its parent in
// the same pass (and by grab() and render()), so the panels only register shapes. The halo is
// one rasterised layer (highlight_halo.h), whose cost does not grow with the shape's parts.
class HighlightOverlay final : public QWidget {
 public:
  explicit HighlightOverlay(PanelView* panel) : QWidget(panel), panel_(panel) {
    setAttribute(Qt::WA_TransparentForMouseEvents);
    setAttribute(Qt::WA_NoSystemBackground);
    hide();
  }

 protected:
  void paintEvent(QPaintEvent*) override {
    const ElementShape element = panel_->element_parts(panel_->highlight());
    if (element.empty()) return;
    const Theme& t = theme();
    HaloStyle style;
    // Logical pixels tied to the font: the same look on a high-DPI screen and a projector.
    style.width = std::max(6.0, QFontMetricsF(panel_->font()).height() * 0.7);
    style.gap = std::max(2.0, style.width / 8);
    style.edge = t.highlight;
    style.dim = t.background;
    style.dim.setAlpha(t.dim_alpha());
    QPainter painter(this);
    // The device painted on: the screen, or an image or SVG that render() redirects to.
    const QPaintDevice* device = painter.paintEngine()->paintDevice();
    painter.drawImage(QRectF(rect()),
                      highlight_layer(element, size(), device->devicePixelRatio(), style));
  }

 private:
  PanelView* panel_;
};

}  // namespace

PanelView::PanelView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  // A click gives the focus (for 0 and Home, which reset the zoom); Tab passes by, so the
  // window's keyboard order stays that of its controls.
  setFocusPolicy(Qt::ClickFocus);
  highlight_overlay_ = new HighlightOverlay(this);
}

bool PanelView::set_highlight(const QString& element) {
  if (!element.isEmpty() && !highlight_elements().contains(element)) return false;
  highlight_ = element;
  highlight_overlay_->setGeometry(rect());
  highlight_overlay_->setVisible(!element.isEmpty());
  highlight_overlay_->raise();
  update();
  return true;
}

QPainterPath PanelView::element_shape(const QString& element) const {
  return element_parts(element).path();
}

ElementShape PanelView::element_parts(const QString& element) const {
  for (const auto& [name, shape] : elements_) {
    if (name == element) return shape;
  }
  return {};
}

ElementShape& PanelView::element(const QString& name) {
  for (auto& [registered, shape] : elements_) {
    if (registered == name) return shape;
  }
  return elements_.emplace_back(name, ElementShape{}).second;
}

void PanelView::mark_element(const QString& element, const QPainterPath& shape) {
  this->element(element).paths.push_back(shape);
}

void PanelView::mark_element(const QString& element, const QRectF& area) {
  this->element(element).areas.push_back(area);
}

bool PanelView::save_png(const QString& path) {
  const QPixmap pixmap = grab();
  return !pixmap.isNull() && pixmap.save(path, "PNG");
}

bool PanelView::save_svg(const QString& path) {
  QSvgGenerator generator;
  generator.setFileName(path);
  generator.setSize(size());
  generator.setViewBox(QRect(QPoint(0, 0), size()));
  generator.setTitle(title());
  generator.setDescription(QStringLiteral("ServeScope panel: %1").arg(title()));
  QPainter painter;
  if (!painter.begin(&generator)) return false;
  render(&painter, QPoint(), QRegion(), RenderFlag::DrawChildren);
  return painter.end() && QFile::exists(path);
}

bool PanelView::save_csv(const QString& path) const {
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text)) return false;
  const QByteArray bytes = (remote_ ? remote_view_csv(*remote_) : csv()).toUtf8();
  return file.write(bytes) == bytes.size();
}

QMenu* PanelView::make_context_menu(QWidget* parent) {
  auto* menu = new QMenu(parent);
  menu->addAction(tr("Save as &PNG..."), this,
                  [this] { save_with_dialog(tr("PNG image (*.png)"), QStringLiteral("png")); });
  menu->addAction(tr("Save as &SVG..."), this,
                  [this] { save_with_dialog(tr("SVG image (*.svg)"), QStringLiteral("svg")); });
  menu->addAction(tr("&Export data as CSV..."), this,
                  [this] { save_with_dialog(tr("CSV table (*.csv)"), QStringLiteral("csv")); });
  if (windows_.any_zoomed() || !hidden_series_.empty()) menu->addSeparator();
  if (windows_.any_zoomed()) menu->addAction(tr("Reset zoom"), this, &PanelView::reset_zoom);
  if (!hidden_series_.empty()) {
    menu->addAction(tr("Show all series"), this, [this] {
      hidden_series_.clear();
      update();
    });
  }
  return menu;
}

void PanelView::save_with_dialog(const QString& filter, const QString& suffix) {
  QString suggested = title().toLower().replace(QLatin1Char(' '), QLatin1Char('-'));
  suggested += QLatin1Char('.') + suffix;
  QString path = QFileDialog::getSaveFileName(this, tr("Save %1").arg(title()), suggested, filter);
  if (path.isEmpty()) return;
  if (!path.endsWith(QLatin1Char('.') + suffix, Qt::CaseInsensitive))
    path += QLatin1Char('.') + suffix;
  bool ok = false;
  if (suffix == QLatin1String("png")) ok = save_png(path);
  if (suffix == QLatin1String("svg")) ok = save_svg(path);
  if (suffix == QLatin1String("csv")) ok = save_csv(path);
  if (!ok) {
    QMessageBox::warning(
        this, tr("Could not save"),
        tr("Could not write %1. Check that the folder exists and is writable.").arg(path));
  }
}

void PanelView::contextMenuEvent(QContextMenuEvent* event) {
  QMenu* menu = make_context_menu(this);
  menu->setAttribute(Qt::WA_DeleteOnClose);
  menu->popup(event->globalPos());
}

bool PanelView::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    hover_.show_tooltip(this, *static_cast<QHelpEvent*>(event));
    return true;
  }
  if (event->type() == QEvent::Resize) highlight_overlay_->setGeometry(rect());
  if (event->type() == QEvent::Paint && remote_) {
    paint_remote_view();
    return true;
  }
  return QWidget::event(event);
}

void PanelView::clear_tooltips() {
  hover_.clear();
  elements_.clear();
  legend_hits_.clear();
  windows_.clear_plots();
}

void PanelView::add_point_tooltips(std::vector<std::pair<QPointF, QString>> points) {
  constexpr qreal kReach = 6;  // a dot's radius and a little more
  hover_.add_points(std::move(points), kReach);
}

void PanelView::paint_empty_state(QPainter& painter, const QString& message) const {
  const Theme& t = theme();
  painter.fillRect(rect(), t.background);
  painter.setPen(t.muted_text);
  painter.setFont(font());
  painter.drawText(rect().adjusted(8, 8, -8, -8), Qt::AlignCenter | Qt::TextWordWrap, message);
}

bool PanelView::paint_if_too_small(QPainter& painter, QSize needed) const {
  if (width() >= needed.width() && height() >= needed.height()) return false;
  paint_empty_state(painter, tr("Enlarge the %1 panel (to at least %2 x %3) to see its charts: a "
                                "larger window, smaller type (Ctrl+-), or in lecture mode T "
                                "(hides the step's text).")
                                 .arg(title())
                                 .arg(needed.width())
                                 .arg(needed.height()));
  return true;
}

qreal PanelView::paint_pacing_note(QPainter& painter, const QRectF& area, const QString& note) {
  if (note.isEmpty()) return 0.0;
  const qreal height = QFontMetricsF(painter.font()).height() + 4;
  const QRectF line(area.left(), area.top(), area.width(), height);
  painter.save();
  painter.setPen(theme().warning);
  painter.drawText(line, Qt::AlignLeft | Qt::AlignVCenter, note);
  painter.restore();
  add_tooltip(line, tr("The engine's clock stands still between steps while you watch: every "
                       "step time, TTFT and TPOT shown is what the same work takes at full "
                       "speed."));
  return height;
}

}  // namespace servescope::widgets
