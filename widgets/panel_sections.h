// Which of a panel's sections fit the room it has, measured in lines of the panel's own font:
// a panel lists its sections with the lines each needs to stay readable, and shows the ones
// this returns. The room, not a "lecture" flag, decides, so a small window and a projector at
// 24 px type get the same treatment.
#pragma once

#include <QFont>
#include <QRectF>
#include <QString>
#include <QStringList>
#include <vector>

class QPainter;

namespace servescope::widgets {

struct Theme;

// Below this many lines a panel leaves out explanations that take room from the charts (long
// legend labels, legends a tooltip also gives).
inline constexpr double kLinesForExplanations = 24.0;

struct SectionNeed {
  QString name;      // the panel's element name where a lesson can highlight it
  double min_lines;  // below this many lines of the panel's font its chart is unreadable
};

// The sections shown in `lines` of room, in `sections`' order. `sections` is in order of
// importance: the highlighted section comes first (a lesson's pointer must stay on screen), then
// the others in that order, each taken while its lines fit what is left. The most important one
// is shown even when nothing fits, so a panel never goes blank.
QStringList sections_that_fit(const std::vector<SectionNeed>& sections, double lines,
                              const QString& highlight);

// The one short line that says what is left out and how to see it, or empty when nothing is:
// "Hidden for room: occupancy, sweep. A larger window or T (hide text) shows them."
QString hidden_sections_note(const QStringList& hidden_titles);

// The lines of `font` that note takes wrapped to `width` (0 when nothing is hidden), so a panel
// can make its choice again with the note's room taken.
double hidden_sections_note_lines(const QFont& font, qreal width, const QStringList& hidden_titles);

// That note in the muted text colour at the top of `area`, wrapped to its width; returns the
// height it took (0 when nothing is hidden).
qreal draw_hidden_sections_note(QPainter& painter, const QRectF& area,
                                const QStringList& hidden_titles, const Theme& theme);

}  // namespace servescope::widgets
