// A choice's button (a radio button or a check box) with its text in a label beside it that
// wraps, which a button's own text cannot: a long option never widens the Learn pane, and with
// it the window. A click on the text clicks the button.
#pragma once

#include <QString>

class QAbstractButton;
class QWidget;

namespace servescope::gui {

// The row owns `button`; its own text stays short ("1.") or empty.
QWidget* option_row(QAbstractButton* button, const QString& text);

}  // namespace servescope::gui
