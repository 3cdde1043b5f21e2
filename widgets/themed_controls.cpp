#include "widgets/themed_controls.h"

#include <QPalette>
#include <QWidget>

#include "widgets/theme.h"

namespace servescope::widgets {

void apply_theme_palette(QWidget& panel) {
  const Theme& t = theme();
  // On a dark background, fields and check boxes need a lighter base to be seen at all.
  const QColor base = t.kind == ThemeKind::kDark ? t.surface : t.background;
  QPalette p = panel.palette();
  if (p.color(QPalette::Base) == base && p.color(QPalette::Text) == t.text &&
      p.color(QPalette::Button) == t.surface) {
    return;
  }
  p.setColor(QPalette::Window, t.background);
  p.setColor(QPalette::WindowText, t.text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, t.surface);
  p.setColor(QPalette::Text, t.text);
  p.setColor(QPalette::Button, t.surface);
  p.setColor(QPalette::ButtonText, t.text);
  p.setColor(QPalette::Highlight, t.series(4));
  p.setColor(QPalette::HighlightedText, QColor(Qt::white));
  p.setColor(QPalette::PlaceholderText, t.muted_text);
  p.setColor(QPalette::ToolTipBase, t.surface);
  p.setColor(QPalette::ToolTipText, t.text);
  panel.setPalette(p);
}

void show_controls(QWidget& panel, bool visible) {
  for (QWidget* child : panel.findChildren<QWidget*>(Qt::FindDirectChildrenOnly)) {
    if (child->isWindow()) continue;  // menus and tooltips are not part of the panel
    child->setVisible(visible);
  }
}

}  // namespace servescope::widgets
