// Panels that hold Qt controls (spin boxes, tables, captions) give them the theme's colours,
// so a dark panel does not show light controls. Children inherit the palette.
#pragma once

class QWidget;

namespace servescope::widgets {

// Sets `panel`'s palette from the current theme when it differs (cheap to call every paint).
void apply_theme_palette(QWidget& panel);

}  // namespace servescope::widgets
