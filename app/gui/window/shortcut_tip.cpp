#include "app/gui/window/shortcut_tip.h"

#include <QAbstractButton>
#include <QAction>
#include <QCoreApplication>

namespace servescope::gui {

QString shortcut_text(const QKeySequence& keys) { return keys.toString(QKeySequence::NativeText); }

QString tip_with_shortcut(const QString& tip, const QKeySequence& keys) {
  if (keys.isEmpty()) return tip;
  //: A tooltip followed by its shortcut: "Runs this step (Ctrl+R)".
  return QCoreApplication::translate("ShortcutTip", "%1 (%2)").arg(tip, shortcut_text(keys));
}

void set_tip_with_shortcut(QAction* action, const QString& tip) {
  action->setToolTip(tip_with_shortcut(tip, action->shortcut()));
}

void set_tip_with_shortcut(QAbstractButton* button, const QString& tip) {
  button->setToolTip(tip_with_shortcut(tip, button->shortcut()));
}

QAction* make_action(const QString& text, const QKeySequence& keys, const QString& tip,
                     QObject* parent) {
  auto* action = new QAction(text, parent);
  action->setShortcut(keys);
  set_tip_with_shortcut(action, tip);
  return action;
}

}  // namespace servescope::gui
