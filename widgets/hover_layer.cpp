#include "widgets/hover_layer.h"

#include <QHelpEvent>
#include <QTextDocument>
#include <QToolTip>
#include <QWidget>
#include <cmath>

namespace servescope::widgets {

void HoverLayer::add(const QRectF& area, const QString& text) {
  tests_.push_back([area, text](QPointF pos) -> std::optional<HoverHit> {
    if (!area.contains(pos)) return std::nullopt;
    return HoverHit{text, area};
  });
}

void HoverLayer::add_points(std::vector<std::pair<QPointF, QString>> points, qreal reach) {
  tests_.push_back([points = std::move(points), reach](QPointF pos) -> std::optional<HoverHit> {
    const std::pair<QPointF, QString>* nearest = nullptr;
    qreal best = reach * reach;
    for (const auto& point : points) {
      const QPointF d = point.first - pos;
      const qreal distance = QPointF::dotProduct(d, d);
      if (distance <= best) {
        best = distance;
        nearest = &point;
      }
    }
    if (nearest == nullptr) return std::nullopt;
    const QPointF corner(reach, reach);
    return HoverHit{nearest->second, QRectF(nearest->first - corner, nearest->first + corner)};
  });
}

std::optional<HoverHit> HoverLayer::hit(QPointF pos) const {
  for (auto it = tests_.rbegin(); it != tests_.rend(); ++it) {
    std::optional<HoverHit> found = (*it)(pos);
    if (found && !found->text.isEmpty()) return found;
  }
  return std::nullopt;
}

QString HoverLayer::text_at(QPointF pos) const {
  const std::optional<HoverHit> found = hit(pos);
  return found ? found->text : QString();
}

QRect HoverLayer::region_at(QPointF pos) const {
  const std::optional<HoverHit> found = hit(pos);
  if (found && !found->area.isEmpty()) return found->area.toAlignedRect();
  // A hit test that names no area describes what is under the mouse: a few pixels' worth.
  constexpr int kReach = 4;
  return QRect(pos.toPoint() - QPoint(kReach, kReach), QSize(2 * kReach + 1, 2 * kReach + 1));
}

void HoverLayer::show_tooltip(QWidget* widget, QHelpEvent& help) const {
  const QString text = text_at(help.pos());
  if (text.isEmpty()) {
    QToolTip::hideText();
    help.ignore();
    return;
  }
  // With the region it describes, so that it goes when the mouse leaves it (a lecturer's long
  // tooltip stayed over the next step's text).
  QToolTip::showText(help.globalPos(), wrapping(text), widget, region_at(help.pos()));
}

QString HoverLayer::wrapping(const QString& text) {
  if (Qt::mightBeRichText(text)) return text;
  return QStringLiteral("<p style=\"white-space:pre-wrap\">%1</p>").arg(text.toHtmlEscaped());
}

}  // namespace servescope::widgets
