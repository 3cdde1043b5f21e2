#include "widgets/theme.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace servescope::widgets {
namespace {

// Okabe & Ito (2008), "Color Universal Design": hues in series order, neutral last.
constexpr std::array<QRgb, Theme::kSeriesCount> kLightSeries = {
    0xE69F00,  // orange
    0x56B4E9,  // sky blue
    0x009E73,  // bluish green
    0xF0E442,  // yellow
    0x0072B2,  // blue
    0xD55E00,  // vermillion
    0xCC79A7,  // reddish purple
    0x000000,  // black
};
// On a dark background the blue is lifted and black becomes a light grey, keeping the hues.
constexpr std::array<QRgb, Theme::kSeriesCount> kDarkSeries = {
    0xE69F00, 0x56B4E9, 0x009E73, 0xF0E442, 0x3D9BE0, 0xD55E00, 0xCC79A7, 0xBBBBBB,
};

// Viridis (van der Walt & Smith, matplotlib 2015) at 0, 1/4, 1/2, 3/4 and 1: perceptually
// even and readable by the common forms of colour blindness.
constexpr std::array<QRgb, 5> kViridis = {0x440154, 0x3B528B, 0x21918C, 0x5EC962, 0xFDE725};

double linear(double channel) {
  return channel <= 0.04045 ? channel / 12.92 : std::pow((channel + 0.055) / 1.055, 2.4);
}

double luminance(const QColor& c) {
  return 0.2126 * linear(c.redF()) + 0.7152 * linear(c.greenF()) + 0.0722 * linear(c.blueF());
}

// `top` at `alpha` (0..255) over `bottom`.
QColor washed(const QColor& bottom, const QColor& top, int alpha) {
  const double a = alpha / 255.0;
  return QColor::fromRgbF(float(top.redF() * a + bottom.redF() * (1 - a)),
                          float(top.greenF() * a + bottom.greenF() * (1 - a)),
                          float(top.blueF() * a + bottom.blueF() * (1 - a)));
}

Theme& current() {
  static Theme theme = Theme::light();
  return theme;
}

}  // namespace

QColor Theme::series(int i) const {
  const auto& palette = kind == ThemeKind::kDark ? kDarkSeries : kLightSeries;
  if (i < 0) return QColor(palette.back());
  return QColor(palette[static_cast<size_t>(i % kSeriesCount)]);
}

QColor Theme::request(int64_t id, bool own) const {
  if (own) return own_request;
  return id % 2 == 0 ? classmate : classmate_alternate;
}

QColor Theme::ordinal(double fraction) const {
  // The end that would vanish into the background is left out: yellow on white, purple and
  // navy on black (batch 1's navy dots were lost on a projector's black).
  const double lo = kind == ThemeKind::kDark ? 0.35 : 0.0;
  const double hi = kind == ThemeKind::kDark ? 1.0 : 0.85;
  const double at = (lo + std::clamp(fraction, 0.0, 1.0) * (hi - lo)) * (kViridis.size() - 1);
  const size_t below = std::min(static_cast<size_t>(at), kViridis.size() - 2);
  const double t = at - double(below);
  const QColor a(kViridis[below]), b(kViridis[below + 1]);
  return QColor::fromRgbF(float(a.redF() + t * (b.redF() - a.redF())),
                          float(a.greenF() + t * (b.greenF() - a.greenF())),
                          float(a.blueF() + t * (b.blueF() - a.blueF())));
}

double contrast_ratio(const QColor& a, const QColor& b) {
  const double la = luminance(a), lb = luminance(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

int Theme::dim_alpha() const {
  constexpr int kPlainDim = 120;
  if (!projector) return kPlainDim;
  const auto keeps_seven_to_one = [this](int alpha) {
    for (const QColor& ink : {text, muted_text, warning}) {
      if (contrast_ratio(washed(ink, background, alpha), background) < 7.1) return false;
    }
    return true;
  };
  int alpha = 0;
  while (alpha < kPlainDim && keeps_seven_to_one(alpha + 1)) ++alpha;
  return alpha;
}

Theme Theme::light() {
  Theme t;
  t.kind = ThemeKind::kLight;
  t.background = QColor(0xFFFFFF);
  t.surface = QColor(0xF2F2F2);
  t.text = QColor(0x1A1A1A);
  t.muted_text = QColor(0x5C5C5C);
  t.grid = QColor(0xDADADA);
  t.prefill = QColor(0x0072B2);
  t.decode = QColor(0xE69F00);
  t.recompute = QColor(0xCC79A7);
  t.highlight = QColor(0xD55E00);
  t.warning = QColor(0xB24500);
  t.own_request = QColor(0xE69F00);  // orange against the classmates' blues: apart for every eye
  t.classmate = QColor(0x0072B2);
  t.classmate_alternate = QColor(0x56B4E9);
  return t;
}

Theme Theme::dark() {
  Theme t;
  t.kind = ThemeKind::kDark;
  t.background = QColor(0x1E1E1E);
  t.surface = QColor(0x2B2B2B);
  t.text = QColor(0xEDEDED);
  t.muted_text = QColor(0xA8A8A8);
  t.grid = QColor(0x444444);
  t.prefill = QColor(0x3D9BE0);
  t.decode = QColor(0xE69F00);
  t.recompute = QColor(0xCC79A7);
  t.highlight = QColor(0xFF7A33);
  t.warning = QColor(0xFF8A4C);
  t.own_request = QColor(0xE69F00);
  t.classmate = QColor(0x2A78B8);  // the two blues further apart than the light theme's on black
  t.classmate_alternate = QColor(0x9AD3F5);
  return t;
}

Theme Theme::high_contrast(Theme t) {
  const bool dark = t.kind == ThemeKind::kDark;
  t.background = dark ? QColor(Qt::black) : QColor(Qt::white);
  t.text = dark ? QColor(Qt::white) : QColor(Qt::black);
  t.muted_text = dark ? QColor(0xDDDDDD) : QColor(0x222222);
  t.grid = QColor(0x8A8A8A);  // visible on black and on white
  // Text in these colours ("Now collecting a batch ...", the latest step) keeps 7:1 too.
  t.warning = dark ? QColor(0xFFA570) : QColor(0x6E2900);
  t.highlight = dark ? QColor(0xFF7A33) : QColor(0xB34700);
  t.projector = true;
  return t;
}

const Theme& theme() { return current(); }

void set_theme(ThemeKind kind, bool high_contrast) {
  current() = kind == ThemeKind::kDark ? Theme::dark() : Theme::light();
  if (high_contrast) current() = Theme::high_contrast(current());
}

QPalette palette_of(const Theme& theme) {
  QPalette palette;
  palette.setColor(QPalette::Window, theme.surface);
  palette.setColor(QPalette::WindowText, theme.text);
  palette.setColor(QPalette::Base, theme.background);
  palette.setColor(QPalette::AlternateBase, theme.surface);
  palette.setColor(QPalette::Text, theme.text);
  palette.setColor(QPalette::Button, theme.surface);
  palette.setColor(QPalette::ButtonText, theme.text);
  palette.setColor(QPalette::ToolTipBase, theme.surface);
  palette.setColor(QPalette::ToolTipText, theme.text);
  palette.setColor(QPalette::PlaceholderText, theme.muted_text);
  palette.setColor(QPalette::Highlight, theme.highlight);
  palette.setColor(QPalette::Disabled, QPalette::Text, theme.muted_text);
  palette.setColor(QPalette::Disabled, QPalette::ButtonText, theme.muted_text);
  palette.setColor(QPalette::Disabled, QPalette::WindowText, theme.muted_text);
  return palette;
}

}  // namespace servescope::widgets
