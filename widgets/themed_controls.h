// Panels that hold Qt controls (spin boxes, tables, captions) give them the theme's colours,
// so a dark panel does not show light controls. Children inherit the palette.
#pragma once

class QWidget;

namespace servescope::widgets {

// Sets `panel`'s palette from the current theme when it differs (cheap to call every paint).
void apply_theme_palette(QWidget& panel);

// Shows or hides the panel's direct child widgets (its controls and painted parts), e.g. to
// make way for a "make me larger" message.
void show_controls(QWidget& panel, bool visible);

}  // namespace servescope::widgets
