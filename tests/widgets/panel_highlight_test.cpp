// Panel highlight (what a lesson points at): every element a panel offers is painted for a full
// snapshot, set_highlight draws the marker-pen halo over it at any device pixel ratio, and an
// unknown element is refused.
#include <gtest/gtest.h>

#include <QElapsedTimer>
#include <QImage>
#include <algorithm>
#include <functional>
#include <iostream>
#include <memory>

#include "tests/widgets/synthetic_model_snapshots.h"
#include "tests/widgets/synthetic_snapshots.h"
#include "widgets/theme.h"

namespace servescope::widgets {
namespace {

template <typename Panel, typename Snapshot>
std::unique_ptr<PanelView> full_panel(const Snapshot& snapshot) {
  auto panel = std::make_unique<Panel>();
  panel->set_snapshot(snapshot);
  panel->resize(1200, 800);
  return panel;
}

std::vector<std::unique_ptr<PanelView>> every_panel() {
  std::vector<std::unique_ptr<PanelView>> panels;
  panels.push_back(full_panel<PhasesPanel>(testing::synthetic_phases(true)));
  panels.push_back(full_panel<KvCachePanel>(testing::synthetic_kv_cache()));
  panels.push_back(full_panel<BatchingPanel>(testing::synthetic_batching(true)));
  panels.push_back(full_panel<QuantisationPanel>(testing::synthetic_quantisation()));
  panels.push_back(full_panel<RooflinePanel>(testing::synthetic_roofline()));
  panels.push_back(full_panel<AttentionPanel>(testing::synthetic_attention(24, false)));
  return panels;
}

// The panel painted at a device pixel ratio, as a high-DPI screen or an export would.
QImage render_at(PanelView& panel, double ratio) {
  QImage image((QSizeF(panel.size()) * ratio).toSize(), QImage::Format_ARGB32_Premultiplied);
  image.setDevicePixelRatio(ratio);
  image.fill(Qt::transparent);
  panel.render(&image);
  return image;
}

// Pixels close to the theme's highlight colour inside a logical rectangle.
int highlight_pixels(const QImage& image, const QRectF& logical) {
  const QColor h = theme().highlight;
  const double ratio = image.devicePixelRatio();
  const QRect area =
      QRectF(logical.topLeft() * ratio, logical.size() * ratio).toAlignedRect() & image.rect();
  int count = 0;
  for (int y = area.top(); y <= area.bottom(); ++y) {
    for (int x = area.left(); x <= area.right(); ++x) {
      const QColor c = image.pixelColor(x, y);
      if (std::abs(c.red() - h.red()) + std::abs(c.green() - h.green()) +
              std::abs(c.blue() - h.blue()) <
          24) {
        ++count;
      }
    }
  }
  return count;
}

TEST(PanelHighlight, EveryOfferedElementIsPaintedForAFullSnapshot) {
  for (const auto& panel : every_panel()) {
    ASSERT_FALSE(panel->highlight_elements().isEmpty()) << panel->title().toStdString();
    (void)render_at(*panel, 1.0);
    for (const QString& element : panel->highlight_elements()) {
      EXPECT_FALSE(panel->element_shape(element).isEmpty())
          << panel->title().toStdString() << ": " << element.toStdString();
    }
  }
}

TEST(PanelHighlight, TheHaloIsDrawnOverTheElementAtEveryPixelRatioInBothThemes) {
  for (const ThemeKind kind : {ThemeKind::kLight, ThemeKind::kDark}) {
    set_theme(kind);
    for (const auto& panel : every_panel()) {
      for (const double ratio : {1.0, 2.0}) {
        for (const QString& element : panel->highlight_elements()) {
          ASSERT_TRUE(panel->set_highlight({}));
          (void)render_at(*panel, ratio);  // lays the panel out
          const QRectF around =
              panel->element_shape(element).boundingRect().adjusted(-12, -12, 12, 12);
          const int before = highlight_pixels(render_at(*panel, ratio), around);
          ASSERT_TRUE(panel->set_highlight(element));
          const int after = highlight_pixels(render_at(*panel, ratio), around);
          // At least a hairline's worth along the element, in device pixels.
          EXPECT_GT(after, before + static_cast<int>(10 * ratio))
              << panel->title().toStdString() << ": " << element.toStdString() << " at " << ratio;
        }
      }
    }
  }
  set_theme(ThemeKind::kLight);
}

// A lecturer saw the halo cover the bars it pointed at: the outline now runs outside the
// element, whose pixels stay exactly as painted without a highlight.
TEST(PanelHighlight, TheOutlineLeavesTheElementItselfUntouched) {
  for (const ThemeKind kind : {ThemeKind::kLight, ThemeKind::kDark}) {
    set_theme(kind, true);
    for (const auto& panel : every_panel()) {
      for (const QString& element : panel->highlight_elements()) {
        ASSERT_TRUE(panel->set_highlight({}));
        (void)render_at(*panel, 1.0);
        const QImage plain = render_at(*panel, 1.0);
        ASSERT_TRUE(panel->set_highlight(element));
        const QImage outlined = render_at(*panel, 1.0);
        int compared = 0, changed = 0;
        for (const QRectF& area : panel->element_parts(element).areas) {
          const QRect inner = area.toAlignedRect().adjusted(1, 1, -1, -1) & plain.rect();
          for (int y = inner.top(); y <= inner.bottom(); ++y) {
            for (int x = inner.left(); x <= inner.right(); ++x) {
              ++compared;
              changed += plain.pixel(x, y) != outlined.pixel(x, y);
            }
          }
        }
        EXPECT_EQ(changed, 0) << panel->title().toStdString() << ": " << element.toStdString()
                              << ", " << compared << " pixels compared";
      }
    }
  }
  set_theme(ThemeKind::kLight);
}

// The Phases panel after a lesson's few generations: 512 steps (the window's history), the
// prompts' prefills between runs of back-to-back decode steps, as a lesson 0 session leaves it.
PhasesSnapshot long_session_phases() {
  PhasesSnapshot snap;
  double clock = 1000.0;
  for (int64_t index = 0; snap.steps.size() < 512; ++index) {
    const bool prefill = index % 100 == 0;
    StepBar s;
    s.index = index;
    s.prefill_tokens = prefill ? 12 : 0;
    s.decode_tokens = prefill ? 0 : 1;
    s.sequences = 1;
    s.context_tokens = 12 + index % 100;
    s.start_ms = clock;
    s.end_ms = clock + (prefill ? 9.0 : 4.0 + 0.01 * static_cast<double>(index % 100));
    clock = s.end_ms + (prefill ? 400.0 : 0.2);  // the learner reads between runs
    snap.steps.push_back(s);
  }
  return snap;
}

double render_ms(PanelView& panel) {
  QElapsedTimer timer;
  timer.start();
  (void)render_at(panel, 1.0);
  return static_cast<double>(timer.nsecsElapsed()) / 1e6;
}

// The halo over hundreds of decode bars costs a repaint about what the bars themselves cost:
// it is painted, not computed as one outline by path boolean operations (which took minutes on
// a loaded machine for a lesson's session and froze the window at every frame).
TEST(PanelHighlight, AHaloOverHundredsOfStepsCostsAboutAsMuchAsPaintingThem) {
  auto panel = full_panel<PhasesPanel>(long_session_phases());
  ASSERT_TRUE(panel->set_highlight({}));
  (void)render_at(*panel, 1.0);  // lays the panel out, warms caches
  double plain_ms = 1e9;
  for (int i = 0; i < 3; ++i) plain_ms = std::min(plain_ms, render_ms(*panel));
  for (const QString element : {"prefill", "decode"}) {
    ASSERT_TRUE(panel->set_highlight(element));
    const double highlighted_ms = render_ms(*panel);
    std::cout << "plain " << plain_ms << " ms, " << element.toStdString() << " highlighted "
              << highlighted_ms << " ms\n";
    EXPECT_LT(highlighted_ms, 4.0 * plain_ms + 100.0)
        << element.toStdString() << "; the plain paint took " << plain_ms << " ms";
  }
}

TEST(PanelHighlight, AnUnknownElementIsRefusedAndAnEmptyNameClears) {
  auto panel = full_panel<RooflinePanel>(testing::synthetic_roofline());
  ASSERT_TRUE(panel->set_highlight("compute-roof"));
  EXPECT_FALSE(panel->set_highlight("chimney"));
  EXPECT_EQ(panel->highlight(), "compute-roof");
  ASSERT_TRUE(panel->set_highlight({}));
  EXPECT_TRUE(panel->highlight().isEmpty());
}

}  // namespace
}  // namespace servescope::widgets
