// Colours of every panel: one app-wide theme (light or dark) built on the Okabe-Ito palette,
// which stays distinguishable for the common forms of colour blindness.
#pragma once

#include <QColor>

namespace servescope::widgets {

enum class ThemeKind { kLight, kDark };

struct Theme {
  ThemeKind kind = ThemeKind::kLight;
  QColor background, surface, text, muted_text, grid;
  // Meanings shared by all panels, so prefill looks the same everywhere.
  QColor prefill, decode, recompute, highlight, warning;

  // Colour of data series i (requests, variants, ...); cycles through the seven Okabe-Ito hues,
  // then the neutral one, and repeats for i >= 8. Negative i gives the neutral colour.
  QColor series(int i) const;
  static constexpr int kSeriesCount = 8;

  static Theme light();
  static Theme dark();
  // The same theme with text at full strength and stronger grid lines, for a projector.
  static Theme high_contrast(Theme base);
};

// The current theme; panels read it in paintEvent. The app calls set_theme and then update()s.
const Theme& theme();
void set_theme(ThemeKind kind, bool high_contrast = false);

}  // namespace servescope::widgets
