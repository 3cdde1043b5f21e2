// Panel highlight (what a lesson points at): every element a panel offers is painted for a full
// snapshot, set_highlight draws the marker-pen halo over it at any device pixel ratio, and an
// unknown element is refused.
#include <gtest/gtest.h>

#include <QImage>
#include <functional>
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
