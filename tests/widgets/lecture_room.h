// A panel as a lecture shows it, for tests of the layout at that size.
#pragma once

#include <QSize>
#include <QString>

class QWidget;

namespace servescope::widgets {
class PanelView;
}

namespace servescope::widgets::testing {

// Lecture type (18 pt: 24 px at 96 dpi) in `size` (by default the panel area a 1280x720
// projector leaves), `highlight` set (empty: none), painted once.
void paint_in_lecture_room(PanelView& panel, const QString& highlight,
                           QSize size = QSize(1280, 460));

// The first text `widget` paints that starts with `start`, or empty.
QString painted_text_starting(QWidget& widget, const QString& start);

}  // namespace servescope::widgets::testing
