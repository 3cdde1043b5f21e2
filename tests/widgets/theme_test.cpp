#include "widgets/theme.h"

#include <gtest/gtest.h>

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

TEST(Theme, SetThemeSwitchesTheCurrentOne) {
  set_theme(ThemeKind::kDark);
  EXPECT_EQ(theme().kind, ThemeKind::kDark);
  EXPECT_EQ(theme().background, Theme::dark().background);
  set_theme(ThemeKind::kLight);
  EXPECT_EQ(theme().kind, ThemeKind::kLight);
  EXPECT_EQ(theme().background, Theme::light().background);
}

}  // namespace
}  // namespace servescope::widgets
