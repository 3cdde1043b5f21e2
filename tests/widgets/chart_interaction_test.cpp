// What users expect of a chart, through synthetic events on panels fed a snapshot: hover values
// from the one hit-test layer, legend entries that hide and show their series, Ctrl+wheel zoom
// around the mouse with drag and reset, and the sweep's log2 batch axis.
#include <gtest/gtest.h>

#include <QAction>
#include <QApplication>
#include <QHelpEvent>
#include <QImage>
#include <QKeyEvent>
#include <QMenu>
#include <QMouseEvent>
#include <QToolTip>
#include <QWheelEvent>
#include <cmath>
#include <memory>

#include "tests/widgets/synthetic_snapshots.h"
#include "widgets/batching_panel.h"
#include "widgets/kv_cache_panel.h"
#include "widgets/phases_panel.h"
#include "widgets/theme.h"

namespace servescope::widgets {
namespace {

template <typename Panel, typename Snapshot>
std::unique_ptr<Panel> painted(const Snapshot& snapshot, QSize size = QSize(1200, 760)) {
  auto panel = std::make_unique<Panel>();
  panel->set_snapshot(snapshot);
  panel->resize(size);
  panel->grab();  // a paint registers the hover areas, legends and zoomable plots
  return panel;
}

bool send(QWidget& widget, QEvent& event) {
  QApplication::sendEvent(&widget, &event);
  return event.isAccepted();
}

bool click(QWidget& widget, QPointF at, QEvent::Type type = QEvent::MouseButtonPress) {
  QMouseEvent press(type, at, widget.mapToGlobal(at), Qt::LeftButton, Qt::LeftButton,
                    Qt::NoModifier);
  const bool accepted = send(widget, press);
  QMouseEvent release(QEvent::MouseButtonRelease, at, widget.mapToGlobal(at), Qt::LeftButton,
                      Qt::NoButton, Qt::NoModifier);
  send(widget, release);
  return accepted;
}

bool wheel(QWidget& widget, QPointF at, int notches, Qt::KeyboardModifiers modifiers) {
  QWheelEvent event(at, widget.mapToGlobal(at), QPoint(), QPoint(0, 120 * notches),
                    Qt::NoButton, modifiers, Qt::NoScrollPhase, false);
  return send(widget, event);
}

bool key(QWidget& widget, int code) {
  QKeyEvent event(QEvent::KeyPress, code, Qt::NoModifier);
  return send(widget, event);
}

// Pixels of exactly `colour` inside `area` of the panel as painted now.
int pixels_of(QWidget& panel, const QRectF& area, const QColor& colour) {
  const QImage image = panel.grab().toImage();
  const qreal dpr = image.devicePixelRatioF();
  int count = 0;
  const QRect box = QRectF(area.topLeft() * dpr, area.size() * dpr).toAlignedRect();
  for (int y = box.top(); y <= box.bottom(); ++y) {
    for (int x = box.left(); x <= box.right(); ++x) count += image.pixel(x, y) == colour.rgb();
  }
  return count;
}

// The value under a point of the plot's x axis, for a window painted over `plot`.
double value_at(const chart::Range& shown, const QRectF& plot, qreal x) {
  return shown.min + (x - plot.left()) / plot.width() * shown.span();
}

TEST(ChartHover, TheTooltipEventShowsTheValuePaintedUnderTheMouse) {
  const BatchingSnapshot snapshot = testing::synthetic_batching(true);
  auto panel = painted<BatchingPanel>(snapshot);
  const std::vector<QPointF>& dots = panel->sweep_dots();
  ASSERT_EQ(dots.size(), snapshot.sweep.size());
  for (size_t i = 0; i < dots.size(); ++i)
    EXPECT_EQ(panel->tooltip_at(dots[i]), sweep_point_text(snapshot.sweep[i]));

  // The tooltip event answers from the same layer, tied to the dot's area.
  QHelpEvent help(QEvent::ToolTip, dots[2].toPoint(), panel->mapToGlobal(dots[2].toPoint()));
  EXPECT_TRUE(send(*panel, help));
  EXPECT_EQ(QToolTip::text(), PanelView::wrapping_tooltip(sweep_point_text(snapshot.sweep[2])));
  EXPECT_TRUE(panel->tooltip_region(dots[2]).contains(dots[2].toPoint()));
  EXPECT_LT(panel->tooltip_region(dots[2]).width(), 20) << "it hides once the mouse leaves the dot";
  QToolTip::hideText();
}

TEST(ChartHover, NothingUnderTheMouseHidesTheTooltipAndIgnoresTheEvent) {
  auto panel = painted<BatchingPanel>(testing::synthetic_batching(true));
  const QPoint corner(panel->width() - 2, panel->height() - 2);
  QHelpEvent help(QEvent::ToolTip, corner, panel->mapToGlobal(corner));
  EXPECT_FALSE(send(*panel, help));
  EXPECT_FALSE(QToolTip::isVisible());
}

TEST(LegendToggle, AClickHidesTheSeriesAndASecondShowsIt) {
  auto panel = painted<PhasesPanel>(testing::synthetic_phases(true));
  const QString chart = QStringLiteral("decode-time");
  const std::optional<QRectF> entry = panel->legend_entry(chart, QStringLiteral("whole step"));
  ASSERT_TRUE(entry.has_value());
  const QRectF plot = panel->zoomable_plot(chart);
  const QColor decode = theme().decode;
  ASSERT_GT(pixels_of(*panel, plot, decode), 0) << "the whole-step dots are painted";

  EXPECT_TRUE(click(*panel, entry->center()));
  EXPECT_TRUE(panel->series_hidden(chart, QStringLiteral("whole step")));
  EXPECT_FALSE(panel->series_hidden(chart, QStringLiteral("attention")));
  EXPECT_EQ(pixels_of(*panel, plot, decode), 0) << "no whole-step dot is painted";
  EXPECT_TRUE(panel->tooltip_at(entry->center()).contains("hidden"));

  EXPECT_TRUE(click(*panel, panel->legend_entry(chart, QStringLiteral("whole step"))->center()));
  EXPECT_FALSE(panel->series_hidden(chart, QStringLiteral("whole step")));
  EXPECT_GT(pixels_of(*panel, plot, decode), 0);
}

TEST(LegendToggle, HiddenSeriesStayAcrossSnapshotsUntilTheViewIsReset) {
  auto panel = painted<KvCachePanel>(testing::synthetic_kv_cache());
  const QString chart = QStringLiteral("retained-bytes");
  const std::optional<QRectF> entry = panel->legend_entry(chart, QStringLiteral("measured"));
  ASSERT_TRUE(entry.has_value());
  click(*panel, entry->center());
  panel->set_snapshot(testing::synthetic_kv_cache());
  panel->grab();
  EXPECT_TRUE(panel->series_hidden(chart, QStringLiteral("measured")));
  std::unique_ptr<QMenu> menu(panel->make_context_menu(nullptr));
  EXPECT_EQ(menu->actions().back()->text(), "Show all series");
  panel->reset_view();
  EXPECT_FALSE(panel->series_hidden(chart, QStringLiteral("measured")));
}

TEST(ChartZoom, CtrlWheelNarrowsTheTimeLineAroundTheMouseAndDoubleClickRestoresIt) {
  auto panel = painted<PhasesPanel>(testing::synthetic_phases(true, 400));
  const QString chart = QStringLiteral("timeline");
  const chart::Range full = panel->time_axis_ms();
  ASSERT_DOUBLE_EQ(panel->shown_x_range(chart).min, full.min);
  ASSERT_DOUBLE_EQ(panel->shown_x_range(chart).max, full.max);
  const QRectF plot = panel->zoomable_plot(chart);
  const QPointF mouse(plot.left() + plot.width() * 0.3, plot.center().y());
  const double under_mouse = value_at(full, plot, mouse.x());

  // A plain wheel is left to the page around the panel.
  EXPECT_FALSE(wheel(*panel, mouse, 1, Qt::NoModifier));
  EXPECT_FALSE(panel->zoomed());

  EXPECT_TRUE(wheel(*panel, mouse, 2, Qt::ControlModifier));
  panel->grab();
  const chart::Range zoomed = panel->shown_x_range(chart);
  EXPECT_NEAR(zoomed.span(), full.span() * 0.64, full.span() * 1e-6);
  EXPECT_NEAR(value_at(zoomed, panel->zoomable_plot(chart), mouse.x()), under_mouse,
              full.span() * 1e-6);
  // The step under the mouse is still the one the tooltip names.
  const std::optional<size_t> step = panel->step_at(mouse);
  ASSERT_TRUE(step.has_value());
  EXPECT_TRUE(panel->tooltip_at(mouse).startsWith(
      QStringLiteral("Step %1:").arg(panel->snapshot().steps[*step].index)));

  click(*panel, mouse, QEvent::MouseButtonDblClick);
  panel->grab();
  EXPECT_FALSE(panel->zoomed());
  EXPECT_DOUBLE_EQ(panel->shown_x_range(chart).min, full.min);
  EXPECT_DOUBLE_EQ(panel->shown_x_range(chart).max, full.max);
}

TEST(ChartZoom, ADragPansAndHomeOrTheMenuResets) {
  auto panel = painted<PhasesPanel>(testing::synthetic_phases(true, 400));
  const QString chart = QStringLiteral("timeline");
  const QRectF plot = panel->zoomable_plot(chart);
  const QPointF mouse = plot.center();
  EXPECT_FALSE(key(*panel, Qt::Key_Home)) << "not zoomed: Home goes on to the window";
  wheel(*panel, mouse, 4, Qt::ControlModifier);
  panel->grab();
  const chart::Range before = panel->shown_x_range(chart);

  QMouseEvent press(QEvent::MouseButtonPress, mouse, panel->mapToGlobal(mouse), Qt::LeftButton,
                    Qt::LeftButton, Qt::NoModifier);
  send(*panel, press);
  const QPointF moved = mouse + QPointF(60, 0);
  QMouseEvent move(QEvent::MouseMove, moved, panel->mapToGlobal(moved), Qt::NoButton,
                   Qt::LeftButton, Qt::NoModifier);
  send(*panel, move);
  QMouseEvent release(QEvent::MouseButtonRelease, moved, panel->mapToGlobal(moved),
                      Qt::LeftButton, Qt::NoButton, Qt::NoModifier);
  send(*panel, release);
  panel->grab();
  const chart::Range after = panel->shown_x_range(chart);
  EXPECT_NEAR(after.span(), before.span(), before.span() * 1e-9);
  EXPECT_NEAR(after.min, before.min - 60 / plot.width() * before.span(), before.span() * 1e-6)
      << "the data follows the mouse to the right";

  std::unique_ptr<QMenu> menu(panel->make_context_menu(nullptr));
  EXPECT_EQ(menu->actions().back()->text(), "Reset zoom");
  EXPECT_TRUE(key(*panel, Qt::Key_Home));
  EXPECT_FALSE(panel->zoomed());
  wheel(*panel, mouse, 1, Qt::ControlModifier);
  EXPECT_TRUE(key(*panel, Qt::Key_0));
  EXPECT_FALSE(panel->zoomed());
}

TEST(ChartZoom, TheSlotsAndTheOccupancyShareTheirStepWindow) {
  auto panel = painted<BatchingPanel>(testing::synthetic_batching(true));
  const QString chart = QStringLiteral("slots");
  const chart::Range full = panel->shown_x_range(chart);
  const QRectF occupancy = panel->zoomable_plot(chart);  // painted first, under the slots
  const double full_width = panel->cell_rect(int64_t(std::lround(full.max - 0.5)), 0)->width();
  const QPointF mouse(occupancy.left() + occupancy.width() * 0.6, occupancy.center().y());
  const auto step_under_mouse = int64_t(std::lround(value_at(full, occupancy, mouse.x())));
  wheel(*panel, mouse, 5, Qt::ControlModifier);
  panel->grab();
  EXPECT_LT(panel->shown_x_range(chart).span(), full.span() * 0.5);
  // Zoomed over the occupancy, the slots above it show the same steps, wider, with the same
  // step under the mouse; its cells' tooltips still name them.
  const std::optional<QRectF> cell = panel->cell_rect(step_under_mouse, 0);
  ASSERT_TRUE(cell.has_value());
  EXPECT_GT(cell->width(), 2 * full_width);
  EXPECT_NEAR(cell->center().x(), mouse.x(), cell->width());
  EXPECT_EQ(panel->tooltip_at(cell->center()), panel->cell_tooltip(cell->center()));
  EXPECT_TRUE(panel->tooltip_at(cell->center()).startsWith(QStringLiteral("Step %1, slot 0")
                                                               .arg(step_under_mouse)));
  EXPECT_FALSE(panel->cell_rect(int64_t(std::lround(full.min + 0.5)), 0).has_value())
      << "the oldest steps are out of the window";
}

TEST(SweepAxis, BatchSizesThatDoubleAreEvenlySpaced) {
  auto panel = painted<BatchingPanel>(testing::synthetic_batching(true));
  const std::vector<QPointF>& dots = panel->sweep_dots();
  ASSERT_EQ(dots.size(), 6u);  // batch 1, 2, 4, 8, 16, 32
  const double step = dots[1].x() - dots[0].x();
  ASSERT_GT(step, 10.0);
  for (size_t i = 1; i < dots.size(); ++i) EXPECT_NEAR(dots[i].x() - dots[i - 1].x(), step, 0.01);
}

}  // namespace
}  // namespace servescope::widgets
