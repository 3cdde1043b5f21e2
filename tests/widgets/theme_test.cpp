#include "widgets/theme.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

namespace servescope::widgets {
namespace {

TEST(Theme, SeriesAreTheOkabeItoHuesInBothThemes) {
  // Okabe & Ito (2008): the seven hues plus black; the dark theme may lift blue and black only.
  const std::set<QRgb> okabe_ito = {0xFFE69F00, 0xFF56B4E9, 0xFF009E73, 0xFFF0E442,
                                    0xFF0072B2, 0xFFD55E00, 0xFFCC79A7, 0xFF000000};
  const Theme light = Theme::light();
  std::set<QRgb> seen;
  for (int i = 0; i < Theme::kSeriesCount; ++i) seen.insert(light.series(i).rgb());
  EXPECT_EQ(seen, okabe_ito);

  const Theme dark = Theme::dark();
  int shared = 0;
  for (int i = 0; i < Theme::kSeriesCount; ++i)
    shared += okabe_ito.count(dark.series(i).rgb()) ? 1 : 0;
  EXPECT_GE(shared, 6);
}

TEST(Theme, SeriesCycleAndNegativeIsNeutral) {
  const Theme t = Theme::light();
  EXPECT_EQ(t.series(Theme::kSeriesCount + 2), t.series(2));
  EXPECT_EQ(t.series(-1), t.series(Theme::kSeriesCount - 1));
}

TEST(Theme, TextContrastsWithBackground) {
  for (const Theme& t : {Theme::light(), Theme::dark()}) {
    EXPECT_GT(std::abs(t.text.lightness() - t.background.lightness()), 150);
    EXPECT_NE(t.prefill, t.decode);
  }
}

// WCAG 2 contrast ratio: relative luminance of sRGB colours, (L1 + 0.05) / (L2 + 0.05).
double luminance(const QColor& c) {
  const auto channel = [](double v) {
    return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
  };
  return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) + 0.0722 * channel(c.blueF());
}

double contrast(const QColor& a, const QColor& b) {
  const double la = luminance(a);
  const double lb = luminance(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

TEST(Theme, HighContrastMeetsWcagAaaForTextAndMutedText) {
  for (const Theme& base : {Theme::light(), Theme::dark()}) {
    const Theme t = Theme::high_contrast(base);
    EXPECT_EQ(t.kind, base.kind);
    EXPECT_DOUBLE_EQ(contrast(t.text, t.background), 21.0);  // black on white, or white on black
    EXPECT_GE(contrast(t.muted_text, t.background), 7.0);    // AAA for body text
    EXPECT_GT(contrast(t.muted_text, t.background), contrast(base.muted_text, base.background));
    EXPECT_GT(contrast(t.grid, t.background), contrast(base.grid, base.background));
    EXPECT_EQ(t.prefill, base.prefill);  // the meanings keep their colours
  }
  set_theme(ThemeKind::kDark, true);
  EXPECT_EQ(theme().text, QColor(Qt::white));
  set_theme(ThemeKind::kLight);
  EXPECT_EQ(theme().text, Theme::light().text);
}

// Lecture mode's promise: every text at least 7:1, the warning line ("Now collecting a batch")
// and text under a highlight's dimming wash included (it took the muted text to 4.4:1).
TEST(Theme, HighContrastKeepsSevenToOneForWarningsAndUnderTheHighlightsWash) {
  const auto washed = [](const QColor& text, const QColor& wash, int alpha) {
    const double a = alpha / 255.0;
    return QColor::fromRgbF(float(wash.redF() * a + text.redF() * (1 - a)),
                            float(wash.greenF() * a + text.greenF() * (1 - a)),
                            float(wash.blueF() * a + text.blueF() * (1 - a)));
  };
  for (const Theme& base : {Theme::light(), Theme::dark()}) {
    const Theme t = Theme::high_contrast(base);
    EXPECT_TRUE(t.projector);
    EXPECT_FALSE(base.projector);
    EXPECT_GE(contrast(t.warning, t.background), 7.0);
    EXPECT_GE(t.dim_alpha(), 30) << "a wash the class can see";
    for (const QColor& text : {t.text, t.muted_text, t.warning}) {
      EXPECT_GE(contrast(washed(text, t.background, t.dim_alpha()), t.background), 7.0)
          << text.name().toStdString();
    }
    EXPECT_EQ(base.dim_alpha(), 120);  // the window's own themes dim as before
    EXPECT_NEAR(contrast_ratio(t.text, t.background), contrast(t.text, t.background), 1e-6);
  }
}

TEST(Theme, SetThemeSwitchesTheCurrentOne) {
  set_theme(ThemeKind::kDark);
  EXPECT_EQ(theme().kind, ThemeKind::kDark);
  EXPECT_EQ(theme().background, Theme::dark().background);
  set_theme(ThemeKind::kLight);
  EXPECT_EQ(theme().kind, ThemeKind::kLight);
  EXPECT_EQ(theme().background, Theme::light().background);
}

TEST(Theme, YourRequestStandsApartFromTheClassmatesWhoseTwoTonesAlternate) {
  for (const Theme& base : {Theme::light(), Theme::dark()}) {
    for (const Theme& t : {base, Theme::high_contrast(base)}) {
      EXPECT_EQ(t.request(12, true), t.request(13, true));  // one colour, whatever the number
      EXPECT_EQ(t.request(12, false), t.classmate);
      EXPECT_EQ(t.request(13, false), t.classmate_alternate);
      // The two tones differ in lightness, which every eye and a greyscale print can tell.
      EXPECT_GE(contrast(t.classmate, t.classmate_alternate), 1.8);
      // Orange against blues: the pair that stays apart for the common colour blindness.
      for (const QColor& classmate : {t.classmate, t.classmate_alternate}) {
        EXPECT_GT(std::abs(t.own_request.hue() - classmate.hue()), 120);
      }
    }
  }
}

TEST(Theme, TheOrdinalScaleGrowsLighterWithTheQuantityAndStaysOffTheBackground) {
  for (const Theme& t : {Theme::light(), Theme::dark(), Theme::high_contrast(Theme::dark())}) {
    double before = 0.0;
    for (int i = 0; i <= 16; ++i) {
      const QColor c = t.ordinal(i / 16.0);
      EXPECT_GT(luminance(c), before) << "step " << i;
      before = luminance(c);
      EXPECT_GE(contrast(c, t.background), 1.5) << "step " << i;  // outlined, but never lost
    }
    EXPECT_EQ(t.ordinal(-1.0), t.ordinal(0.0));
    EXPECT_EQ(t.ordinal(2.0), t.ordinal(1.0));
  }
}

}  // namespace
}  // namespace servescope::widgets
