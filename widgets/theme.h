// Colours of every panel: one app-wide theme (light or dark) built on the Okabe-Ito palette,
// which stays distinguishable for the common forms of colour blindness.
#pragma once

#include <QColor>
#include <QPalette>
#include <cstdint>

namespace servescope::widgets {

enum class ThemeKind { kLight, kDark };

struct Theme {
  ThemeKind kind = ThemeKind::kLight;
  QColor background, surface, text, muted_text, grid;
  // Meanings shared by all panels, so prefill looks the same everywhere.
  QColor prefill, decode, recompute, highlight, warning;
  bool projector = false;  // high_contrast(): lecture mode's: every text at least 7:1 on the background

  // The alpha of the wash a highlight lays over the rest of the panel: in high contrast the
  // strongest wash that keeps the text, muted text and warnings at 7:1 (a stronger one took it to 4.4:1).
  int dim_alpha() const;

  // Colour of data series i (requests, variants, ...); cycles through the seven Okabe-Ito hues,
  // then the neutral one, and repeats for i >= 8. Negative i gives the neutral colour.
  QColor series(int i) const;
  static constexpr int kSeriesCount = 8;

  // Whose request: the user's own in one colour in every panel and run; every other request a
  // classmate's, in one of two tones of another hue alternating by number, so that neighbours in
  // a slot or in the block pool stay apart. (Eight hues cannot tell 16 or 32 requests apart:
  // the numbers are on hover and in the tables instead.)
  QColor own_request, classmate, classmate_alternate;
  QColor request(int64_t id, bool own) const;

  // An ordered quantity (batch size, ...) at `fraction` 0..1 of its range: a sequential scale
  // (viridis) whose lightness rises with it, readable on this theme's background and in grey.
  QColor ordinal(double fraction) const;

  static Theme light();
  static Theme dark();
  // The same theme with text at full strength and stronger grid lines, for a projector.
  static Theme high_contrast(Theme base);
};

// WCAG 2 contrast ratio of two opaque colours: 1 (none) to 21 (black on white).
double contrast_ratio(const QColor& a, const QColor& b);

// The application's palette in `theme`'s colours: every widget, dialogs included, follows it.
QPalette palette_of(const Theme& theme);

// The current theme; panels read it in paintEvent. The app calls set_theme and then update()s.
const Theme& theme();
void set_theme(ThemeKind kind, bool high_contrast = false);

}  // namespace servescope::widgets
