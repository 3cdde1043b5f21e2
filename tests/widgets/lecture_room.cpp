#include "tests/widgets/lecture_room.h"

#include <QFont>
#include <QPixmap>

#include "tests/widgets/text_probe.h"
#include "widgets/panel_view.h"

namespace servescope::widgets::testing {

void paint_in_lecture_room(PanelView& panel, const QString& highlight, QSize size) {
  QFont font = panel.font();
  font.setPointSizeF(18);
  panel.setFont(font);
  panel.resize(size);
  panel.set_highlight(highlight);
  panel.grab();
}

QString painted_text_starting(QWidget& widget, const QString& start) {
  for (const PaintedText& text : painted_texts(widget)) {
    if (text.text.startsWith(start)) return text.text;
  }
  return {};
}

}  // namespace servescope::widgets::testing
