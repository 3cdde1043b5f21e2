// A wheel over a number box or a list box in a scrolling column scrolls the column, not the
// box's value: the box takes the wheel only once it has the focus (a click or Tab). A learner
// scrolling the controls to read a message had turned Temperature from 0.80 to 0.35 unseen.
#pragma once

class QWidget;

namespace servescope::gui {

// Applies that to every spin box and combo box inside `column`, present now.
void guard_wheel_in(QWidget* column);

}  // namespace servescope::gui
