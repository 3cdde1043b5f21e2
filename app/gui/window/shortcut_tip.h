// Tooltips that name a shortcut as Qt spells it on this platform ("Ctrl+R" here, "⌘R" on a
// Mac) instead of keys written by hand into the text, which go stale when the shortcut changes
// and are wrong on other platforms.
#pragma once

#include <QKeySequence>
#include <QString>

class QAbstractButton;
class QAction;
class QObject;

namespace servescope::gui {

// The shortcut as the user reads it on this platform; empty for none.
QString shortcut_text(const QKeySequence& keys);

// "<tip> (<shortcut>)", or `tip` alone when there is no shortcut.
QString tip_with_shortcut(const QString& tip, const QKeySequence& keys);

// Sets the tooltip to `tip` followed by the action's (or button's) own shortcut: set the
// shortcut first.
void set_tip_with_shortcut(QAction* action, const QString& tip);
void set_tip_with_shortcut(QAbstractButton* button, const QString& tip);

// An action with its text, shortcut and tooltip (which names the shortcut), owned by `parent`.
QAction* make_action(const QString& text, const QKeySequence& keys, const QString& tip,
                     QObject* parent);

}  // namespace servescope::gui
