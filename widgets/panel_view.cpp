#include "widgets/panel_view.h"

#include <QContextMenuEvent>
#include <QFile>
#include <QFileDialog>
#include <QHelpEvent>
#include <QMenu>
#include <QMessageBox>
#include <QPainter>
#include <QPixmap>
#include <QSvgGenerator>
#include <QToolTip>

#include "widgets/theme.h"

namespace servescope::widgets {

PanelView::PanelView(QWidget* parent) : QWidget(parent) { setMouseTracking(true); }

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
  const QByteArray bytes = csv().toUtf8();
  return file.write(bytes) == bytes.size();
}

QMenu* PanelView::make_context_menu(QWidget* parent) {
  auto* menu = new QMenu(parent);
  menu->addAction(tr("Save as PNG..."), this,
                  [this] { save_with_dialog(tr("PNG image (*.png)"), QStringLiteral("png")); });
  menu->addAction(tr("Save as SVG..."), this,
                  [this] { save_with_dialog(tr("SVG image (*.svg)"), QStringLiteral("svg")); });
  menu->addAction(tr("Export data as CSV..."), this,
                  [this] { save_with_dialog(tr("CSV table (*.csv)"), QStringLiteral("csv")); });
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

QString PanelView::tooltip_at(QPointF pos) const {
  for (auto it = tooltips_.rbegin(); it != tooltips_.rend(); ++it) {
    if (it->first.contains(pos)) return it->second;
  }
  return computed_tooltip(pos);
}

QString PanelView::computed_tooltip(QPointF) const { return {}; }

bool PanelView::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const QString text = tooltip_at(help->pos());
    if (text.isEmpty()) {
      QToolTip::hideText();
      event->ignore();
    } else {
      QToolTip::showText(help->globalPos(), text, this);
    }
    return true;
  }
  return QWidget::event(event);
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
  paint_empty_state(painter, tr("Enlarge the %1 panel (to at least %2 x %3) to see its charts.")
                                 .arg(title())
                                 .arg(needed.width())
                                 .arg(needed.height()));
  return true;
}

}  // namespace servescope::widgets
