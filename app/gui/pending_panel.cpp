#include "app/gui/pending_panel.h"

#include <QPainter>

#include "widgets/theme.h"

namespace servescope::gui {

PendingPanel::PendingPanel(QString title, QString purpose, QWidget* parent)
    : PanelView(parent), title_(std::move(title)), purpose_(std::move(purpose)) {}

void PendingPanel::set_lines(QStringList lines) {
  lines_ = std::move(lines);
  update();
}

QString PendingPanel::csv() const {
  QString text = "figure,value\n";
  for (const QString& line : lines_) {
    const qsizetype colon = line.indexOf(':');
    text += line.left(colon).trimmed() + "," + line.mid(colon + 1).trimmed() + "\n";
  }
  return text;
}

void PendingPanel::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  if (lines_.isEmpty()) {
    paint_empty_state(painter, "No data yet: press Generate");
    return;
  }
  const widgets::Theme& theme = widgets::theme();
  painter.fillRect(rect(), theme.background);
  QFont heading = font();
  heading.setBold(true);
  heading.setPointSizeF(font().pointSizeF() * 1.3);
  const QRect area = rect().adjusted(24, 24, -24, -24);
  painter.setFont(heading);
  painter.setPen(theme.text);
  painter.drawText(area, Qt::AlignLeft | Qt::AlignTop, title_);
  painter.setFont(font());
  painter.setPen(theme.muted_text);
  const int line = QFontMetrics(font()).height();
  const QRect purpose = area.adjusted(0, QFontMetrics(heading).height() + line / 2, 0, 0);
  painter.drawText(purpose, Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, purpose_);
  painter.setPen(theme.text);
  painter.drawText(purpose.adjusted(0, 3 * line, 0, 0), Qt::AlignLeft | Qt::AlignTop,
                   lines_.join('\n'));
}

}  // namespace servescope::gui
