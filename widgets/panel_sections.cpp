#include "widgets/panel_sections.h"

#include <QFontMetricsF>
#include <QObject>
#include <QPainter>
#include <algorithm>

#include "widgets/theme.h"

namespace servescope::widgets {

QStringList sections_that_fit(const std::vector<SectionNeed>& sections, double lines,
                              const QString& highlight) {
  if (sections.empty()) return {};
  std::vector<const SectionNeed*> by_importance;
  for (const SectionNeed& s : sections) by_importance.push_back(&s);
  // The highlighted section moves to the front; the others keep their order.
  std::stable_partition(by_importance.begin(), by_importance.end(),
                        [&highlight](const SectionNeed* s) { return s->name == highlight; });
  std::vector<const SectionNeed*> chosen = {by_importance.front()};
  double left = lines - by_importance.front()->min_lines;
  for (size_t i = 1; i < by_importance.size(); ++i) {
    if (by_importance[i]->min_lines > left) continue;
    chosen.push_back(by_importance[i]);
    left -= by_importance[i]->min_lines;
  }
  QStringList shown;
  for (const SectionNeed& s : sections) {
    if (std::ranges::find(chosen, &s) != chosen.end()) shown << s.name;
  }
  return shown;
}

QString hidden_sections_note(const QStringList& hidden_titles) {
  if (hidden_titles.isEmpty()) return {};
  return QObject::tr("Hidden for room: %1. A larger window or T (hide text) shows %2.")
      .arg(hidden_titles.join(QStringLiteral(", ")),
           hidden_titles.size() == 1 ? QObject::tr("it") : QObject::tr("them"));
}

double hidden_sections_note_lines(const QFont& font, qreal width,
                                  const QStringList& hidden_titles) {
  const QString note = hidden_sections_note(hidden_titles);
  if (note.isEmpty()) return 0.0;
  const QFontMetricsF metrics(font);
  return (metrics.boundingRect(QRectF(0, 0, width, 0), Qt::AlignLeft | Qt::TextWordWrap, note)
              .height() +
          4) /
         metrics.lineSpacing();
}

qreal draw_hidden_sections_note(QPainter& painter, const QRectF& area,
                                const QStringList& hidden_titles, const Theme& theme) {
  const QString note = hidden_sections_note(hidden_titles);
  if (note.isEmpty()) return 0.0;
  const int flags = Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap;
  const QRectF box = painter.boundingRect(QRectF(area.left(), area.top(), area.width(), 0), flags,
                                          note);
  painter.save();
  painter.setPen(theme.muted_text);
  painter.drawText(QRectF(area.left(), area.top(), area.width(), box.height()), flags, note);
  painter.restore();
  return box.height() + 4;
}

}  // namespace servescope::widgets
