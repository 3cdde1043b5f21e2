// An action's tooltip with its shortcut as Qt writes it for this platform ("Ctrl+Return",
// "⌘↩"), so no tooltip copies a shortcut by hand and none goes stale when a key changes.
#pragma once

#include <QAction>
#include <QKeySequence>
#include <QString>

namespace servescope::gui {

inline void set_tip(QAction* action, const QString& text) {
  const QString keys = action->shortcut().toString(QKeySequence::NativeText);
  action->setToolTip(keys.isEmpty() ? text : QStringLiteral("%1 (%2)").arg(text, keys));
}

}  // namespace servescope::gui
