#include "widgets/roofline_panel.h"

#include <gtest/gtest.h>

#include <QFileInfo>
#include <QImage>
#include <QTemporaryDir>
#include <optional>
#include <utility>
#include <vector>
#include <cmath>

#include "tests/widgets/synthetic_model_snapshots.h"
#include "tests/widgets/text_probe.h"
#include "widgets/label_layout.h"
#include "widgets/theme.h"

namespace servescope::widgets {
namespace {

RooflineSnapshot probed_snapshot() {
  RooflineSnapshot s;
  s.device_name = QStringLiteral("llvmpipe (LLVM 15, 256 bits)");
  s.cache_gb_per_s = 48.6;
  s.memory_gb_per_s = 12.3;
  s.compute_gflop_per_s = 96.4;
  s.points = {
      {0, StepPhase::kPrefill, 1, 29.5, 61.2}, {1, StepPhase::kDecode, 1, 0.49, 5.1},
      {2, StepPhase::kDecode, 1, 0.49, 5.3},   {3, StepPhase::kMixed, 2, 7.5, 30.0},
      {4, StepPhase::kDecode, 4, 1.9, 20.2},   {5, StepPhase::kDecode, 16, 7.2, 70.4},
  };
  return s;
}

TEST(RooflineMath, AttainableIsTheLowerOfSlopeAndRoof) {
  EXPECT_DOUBLE_EQ(attainable_gflop_per_s(2.0, 10.0, 100.0), 20.0);    // on the slope
  EXPECT_DOUBLE_EQ(attainable_gflop_per_s(50.0, 10.0, 100.0), 100.0);  // under the roof
  EXPECT_DOUBLE_EQ(attainable_gflop_per_s(50.0, 10.0, 0.0), 500.0);    // no compute roof
  EXPECT_DOUBLE_EQ(ridge_intensity(12.5, 100.0), 8.0);
  EXPECT_DOUBLE_EQ(ridge_intensity(0.0, 100.0), 0.0);
}

TEST(RooflineMath, DecadeRangeCoversEveryPositiveValue) {
  const DecadeRange r = decade_range({0.049, 3.0, 712.0, 0.0, -4.0});
  EXPECT_EQ(r.low, -2);
  EXPECT_EQ(r.high, 3);
  const DecadeRange exact = decade_range({10.0});
  EXPECT_EQ(exact.low, 1);
  EXPECT_EQ(exact.high, 2);  // at least one decade
}

TEST(RooflineMath, DecadeLabelsUseSiPrefixes) {
  EXPECT_EQ(decade_label(-2), QStringLiteral("0.01"));
  EXPECT_EQ(decade_label(0), QStringLiteral("1"));
  EXPECT_EQ(decade_label(2), QStringLiteral("100"));
  EXPECT_EQ(decade_label(3), QStringLiteral("1k"));
  EXPECT_EQ(decade_label(4), QStringLiteral("10k"));
  EXPECT_EQ(decade_label(9), QStringLiteral("1G"));
}

TEST(RooflinePanel, RoofLabelsCarryTheMeasuredValues) {
  RooflinePanel panel;
  EXPECT_EQ(panel.notes(), (QStringList{"device not probed yet", "no data yet: press Generate"}));
  panel.set_snapshot(probed_snapshot());
  EXPECT_TRUE(panel.has_roofs());
  EXPECT_TRUE(panel.notes().isEmpty());
  const QStringList labels = panel.roof_labels();
  ASSERT_EQ(labels.size(), 3);
  EXPECT_TRUE(labels[0].contains(QStringLiteral("cache")) && labels[0].contains("48.6 GB/s"));
  EXPECT_TRUE(labels[1].contains(QStringLiteral("main memory")) && labels[1].contains("12.3 GB/s"));
  EXPECT_TRUE(labels[2].contains(QStringLiteral("96.4 GFLOP/s")));
}

TEST(RooflinePanel, RidgePointsAreComputeOverBandwidth) {
  RooflinePanel panel;
  panel.set_snapshot(probed_snapshot());
  const std::vector<double> ridges = panel.ridge_points();
  ASSERT_EQ(ridges.size(), 2u);
  EXPECT_DOUBLE_EQ(ridges[0], 96.4 / 48.6);
  EXPECT_DOUBLE_EQ(ridges[1], 96.4 / 12.3);
}

TEST(RooflinePanel, AxesSpanWholeDecadesAroundPointsAndRoofs) {
  RooflinePanel panel;
  panel.set_snapshot(probed_snapshot());
  // x: the lowest intensity 0.49 and the roofs' ridges x4 (31.3) -> [0.1, 100].
  EXPECT_EQ(panel.x_decades().low, -1);
  EXPECT_EQ(panel.x_decades().high, 2);
  // y: main memory at 0.1 FLOP/byte is 1.23 GFLOP/s; the compute roof with headroom 192.8.
  EXPECT_EQ(panel.y_decades().low, 0);
  EXPECT_EQ(panel.y_decades().high, 3);
  for (const RooflinePoint& p : panel.snapshot().points) {
    EXPECT_GE(p.intensity_flop_per_byte, std::pow(10.0, panel.x_decades().low));
    EXPECT_LE(p.intensity_flop_per_byte, std::pow(10.0, panel.x_decades().high));
    EXPECT_GE(p.gflop_per_s, std::pow(10.0, panel.y_decades().low));
    EXPECT_LE(p.gflop_per_s, std::pow(10.0, panel.y_decades().high));
  }
}

TEST(RooflinePanel, LegendHasOneEntryPerBatchSizeThenThePhases) {
  RooflinePanel panel;
  panel.set_snapshot(probed_snapshot());
  const QStringList expected = {"batch 1", "batch 2", "batch 4", "batch 16",
                                "prefill", "decode",  "mixed"};
  EXPECT_EQ(panel.legend_entries(), expected);
}

TEST(RooflinePanel, UnprobedDeviceHasNoRoofs) {
  RooflinePanel panel;
  RooflineSnapshot s = probed_snapshot();
  s.cache_gb_per_s = s.memory_gb_per_s = s.compute_gflop_per_s = 0.0;
  panel.set_snapshot(s);
  EXPECT_FALSE(panel.has_roofs());
  EXPECT_EQ(panel.notes(), QStringList{QStringLiteral("device not probed yet")});
  EXPECT_TRUE(panel.roof_labels().isEmpty());
  EXPECT_TRUE(panel.ridge_points().empty());
  EXPECT_EQ(panel.x_decades().low, -1);  // still spans the points: 0.49 .. 29.5
  EXPECT_EQ(panel.x_decades().high, 2);
}

TEST(RooflinePanel, CsvHasOneRowPerStepWithTheRoofsItIsComparedAgainst) {
  RooflinePanel panel;
  panel.set_snapshot(probed_snapshot());
  const QStringList lines = panel.csv().split('\n', Qt::SkipEmptyParts);
  ASSERT_EQ(lines.size(), 1 + 6);
  EXPECT_EQ(lines[0], QStringLiteral("step,phase,batch_size,intensity_flop_per_byte,gflop_per_s,"
                                     "cache_gb_per_s,memory_gb_per_s,compute_gflop_per_s,"
                                     "roof,roof_gflop_per_s"));
  // Prefill at 29.5 FLOP/byte is past the main-memory ridge (7.84): the roof is compute.
  EXPECT_EQ(lines[1], QStringLiteral("0,prefill,1,29.5,61.2,48.6,12.3,96.4,memory,96.4"));
  // Decode at 0.49 FLOP/byte is on the slope: 12.3 GB/s x 0.49 = 6.027 GFLOP/s.
  EXPECT_EQ(
      lines[2],
      QStringLiteral("1,decode,1,0.49,5.1,48.6,12.3,96.4,memory,%1").arg(12.3 * 0.49, 0, 'g', 9));
  // A step judged against the cache: 48.6 GB/s x 0.49.
  RooflineSnapshot in_cache = probed_snapshot();
  in_cache.points[1].roof = PointRoof::kCache;
  panel.set_snapshot(in_cache);
  EXPECT_EQ(
      panel.csv().split('\n')[2],
      QStringLiteral("1,decode,1,0.49,5.1,48.6,12.3,96.4,cache,%1").arg(48.6 * 0.49, 0, 'g', 9));
  EXPECT_EQ(RooflinePanel().csv().count('\n'), 1);  // the header alone
}

TEST(RooflinePanel, PointsHaveTooltipsWithTheirNumbers) {
  RooflinePanel panel;
  panel.resize(800, 600);
  panel.set_snapshot(probed_snapshot());
  (void)panel.grab();  // paints, which registers the tooltip areas
  bool found = false;
  for (int y = 0; y < 600 && !found; y += 2) {
    for (int x = 0; x < 800 && !found; x += 2) {
      // 12.3 GB/s x 7.5 FLOP/byte = 92.25 GFLOP/s allowed; 30 is 32.5% of it.
      found = panel.point_tooltip(QPointF(x, y)) ==
              QStringLiteral(
                  "Step 3 (mixed, batch 2): 7.50 FLOP/byte, 30 GFLOP/s, 32.5% of "
                  "what the main-memory roof allows (its weights and KV do not fit the "
                  "last-level cache).");
    }
  }
  EXPECT_TRUE(found);
}

// Each point is judged against its own bandwidth roof (and the compute roof): the check finds a
// point drawn above it, so a roof that was not raised by a step that beat it shows.
TEST(RooflinePanel, FindsPointsAboveTheRoofTheyAreJudgedAgainst) {
  RooflinePanel panel;
  RooflineSnapshot s = probed_snapshot();
  panel.set_snapshot(s);
  EXPECT_TRUE(panel.points_above_roofs().empty());
  // 0.49 FLOP/byte at 10 GFLOP/s: above main memory's 6.03, under the cache's 23.8.
  s.points.push_back({6, StepPhase::kDecode, 1, 0.49, 10.0, PointRoof::kMemory});
  s.points.push_back({7, StepPhase::kDecode, 1, 0.49, 10.0, PointRoof::kCache});
  // 30 FLOP/byte at 120 GFLOP/s: above the 96.4 compute roof whichever bandwidth judges it.
  s.points.push_back({8, StepPhase::kPrefill, 1, 30.0, 120.0, PointRoof::kCache});
  panel.set_snapshot(s);
  const std::vector<RooflinePoint> above = panel.points_above_roofs();
  ASSERT_EQ(above.size(), 2u);
  EXPECT_EQ(above[0].step_index, 6);
  EXPECT_EQ(above[1].step_index, 8);
}

// The snapshot the docs' screenshots and the paint tests draw keeps every point under its roof.
TEST(RooflinePanel, TheSyntheticSessionHasNoPointAboveItsRoof) {
  RooflinePanel panel;
  panel.set_snapshot(testing::synthetic_roofline());
  EXPECT_TRUE(panel.points_above_roofs().empty());
}

TEST(RooflinePanel, RaisedRoofsAreSaidSo) {
  RooflinePanel panel;
  RooflineSnapshot s = probed_snapshot();
  panel.set_snapshot(s);
  EXPECT_TRUE(panel.raised_note().isEmpty());
  s.memory_raised = true;
  panel.set_snapshot(s);
  EXPECT_EQ(panel.raised_note(), QStringLiteral("main memory roof raised by a measured step"));
  const QStringList labels = panel.roof_labels();
  EXPECT_FALSE(labels[0].contains(QStringLiteral("raised")));
  EXPECT_EQ(labels[1], QStringLiteral("main memory 12.3 GB/s (raised by a measured step)"));
  s.cache_raised = s.compute_raised = true;
  panel.set_snapshot(s);
  EXPECT_EQ(panel.raised_note(),
            QStringLiteral("cache, main memory and compute roofs raised by a measured step"));
  // Raised on another model, kept on this device: which step it was is said.
  s.cache_raised_by = s.compute_raised_by = QStringLiteral("a step of big.gguf on 2026-12-06");
  s.memory_raised_by = QStringLiteral("a step of this run");
  panel.set_snapshot(s);
  EXPECT_EQ(panel.raised_note(),
            QStringLiteral("cache and compute roofs raised by a step of big.gguf on 2026-12-06; "
                           "main memory roof raised by a step of this run"));
  panel.resize(900, 600);
  EXPECT_FALSE(panel.grab().isNull());
}

// Steps no engine should send: no FLOPs, negative, infinite and NaN values; roofs partly
// measured. They are left out of the plot and its ranges, and nothing crashes.
TEST(RooflinePanel, UnplaceableStepsAreLeftOut) {
  RooflineSnapshot s;
  s.memory_gb_per_s = 12.3;  // no cache roof, no compute roof
  s.cache_gb_per_s = INFINITY;
  s.compute_gflop_per_s = std::nan("");
  const double nan = std::nan("");
  s.points = {{0, StepPhase::kIdle, 0, 0.0, 0.0},
              {1, StepPhase::kDecode, 1, -1.0, 5.0},
              {2, StepPhase::kDecode, 1, nan, 5.0},
              {3, StepPhase::kDecode, 1, 0.5, INFINITY},
              {4, StepPhase::kDecode, 1, 0.5, 6.0}};
  RooflinePanel panel;
  panel.set_snapshot(s);
  EXPECT_TRUE(panel.has_roofs());
  EXPECT_EQ(panel.roof_labels(), QStringList{QStringLiteral("main memory 12.3 GB/s")});
  EXPECT_TRUE(panel.ridge_points().empty());  // no compute roof, no ridge
  EXPECT_EQ(panel.x_decades().low, -1);       // from the one good step, 0.5
  EXPECT_EQ(panel.x_decades().high, 0);
  for (const QSize size : {QSize(1, 1), QSize(200, 150), QSize(1200, 700)}) {
    panel.resize(size);
    EXPECT_FALSE(panel.grab().isNull());
  }
  EXPECT_EQ(panel.csv().count('\n'), 1 + 5);
}

}  // namespace
}  // namespace servescope::widgets

namespace servescope::widgets {
namespace {

TEST(LabelPlacer, TakesTheFirstCandidateThatMeetsNothing) {
  LabelPlacer placer(QRectF(0, 0, 200, 100));
  placer.avoid(QRectF(0, 0, 50, 20));
  placer.avoid(QLineF(QPointF(0, 50), QPointF(200, 50)));
  const std::optional<QRectF> box = placer.place({QRectF(10, 10, 40, 10),    // meets the box
                                                  QRectF(10, 45, 40, 10),    // meets the line
                                                  QRectF(250, 10, 40, 10),   // outside
                                                  QRectF(60, 10, 40, 10)});  // free
  ASSERT_TRUE(box.has_value());
  EXPECT_EQ(*box, QRectF(60, 10, 40, 10));
  // Taken now: the next label goes elsewhere.
  EXPECT_FALSE(placer.is_free(QRectF(70, 12, 10, 5)));
  EXPECT_EQ(*placer.place({QRectF(70, 12, 10, 5), QRectF(70, 60, 10, 5)}), QRectF(70, 60, 10, 5));
}

TEST(LabelPlacer, NeverDropsALabelInsideItsBounds) {
  LabelPlacer placer(QRectF(0, 0, 100, 100));
  placer.avoid(QRectF(0, 0, 100, 100));
  EXPECT_TRUE(placer.place({QRectF(10, 10, 20, 10)}).has_value());  // the least bad
  EXPECT_FALSE(placer.place({QRectF(-10, 10, 20, 10)}).has_value());
}

// Two roof figures were printed over each other and over the lesson's outline: with no free
// place, a label goes over a plain obstacle before an outline, and over either before a label.
TEST(LabelPlacer, WithNoFreePlaceALabelIsTheLastThingToCover) {
  LabelPlacer placer(QRectF(0, 0, 100, 100));
  const QRectF first(10, 10, 20, 10), second(10, 40, 20, 10), third(10, 70, 20, 10);
  placer.avoid(QRectF(0, 35, 100, 20), 100);  // an outline over the second place
  placer.avoid(QRectF(0, 65, 100, 20));       // a point over the third
  EXPECT_EQ(placer.place_free({first}), first);
  EXPECT_FALSE(placer.place_free({first, second, third}).has_value());
  EXPECT_EQ(placer.place({first, second, third}), third);
  EXPECT_EQ(placer.place({first, second}), second);
}

TEST(LabelPlacer, SegmentsMeetBoxesTheyCrossOrEndIn) {
  const QRectF box(10, 10, 10, 10);
  EXPECT_TRUE(segment_meets(QLineF(0, 0, 30, 30), box));  // crosses
  EXPECT_TRUE(segment_meets(QLineF(15, 15, 50, 15), box));  // starts inside
  EXPECT_FALSE(segment_meets(QLineF(0, 30, 30, 25), box));  // passes under
}

TEST(RowLabels, StayInsideTheRowsAndNeverTouchEachOther) {
  for (const double label : {10.0, 24.0, 26.0, 40.0}) {
    for (const double row : {3.0, 8.0, 9.5, 13.0, 30.0}) {
      for (const int64_t count : {1, 2, 7, 16, 32}) {
        const auto stride = static_cast<int64_t>(std::max(1.0, std::ceil(label / row)));
        const std::vector<RowLabel> labels = row_labels(count, stride, 100.0, row, label);
        ASSERT_FALSE(labels.empty());
        EXPECT_EQ(labels.front().row, 0);
        const double bottom = 100.0 + row * static_cast<double>(count);
        for (size_t i = 0; i < labels.size(); ++i) {
          if (label <= row * static_cast<double>(count)) {
            EXPECT_GE(labels[i].centre - label / 2, 100.0 - 1e-9);
            EXPECT_LE(labels[i].centre + label / 2, bottom + 1e-9);
          }
          if (i > 0) {
            EXPECT_GE(labels[i].centre - labels[i - 1].centre, label - 0.5);
          }
        }
      }
    }
  }
  // 16 rows of 9.5 px, labels 26 px every 3rd: slot 0's clamped label crowds slot 3's, so
  // every 4th, evenly: 0, 4, 8, 12.
  std::vector<int64_t> rows;
  for (const RowLabel& l : row_labels(16, 3, 0.0, 9.5, 26.0)) rows.push_back(l.row);
  EXPECT_EQ(rows, (std::vector<int64_t>{0, 4, 8, 12}));
  // Rows of 15 px, labels 27 px every 2nd: 0 and 2 would crowd (0 clamped down): every 3rd.
  rows.clear();
  for (const RowLabel& l : row_labels(16, 2, 0.0, 15.0, 27.0)) rows.push_back(l.row);
  EXPECT_EQ(rows, (std::vector<int64_t>{0, 3, 6, 9, 12, 15}));
}

TEST(LabelPlacer, DistanceToASegmentIsToItsNearestPoint) {
  const QLineF segment(QPointF(0, 0), QPointF(10, 0));
  EXPECT_DOUBLE_EQ(distance_to_segment(QPointF(5, 3), segment), 3.0);
  EXPECT_DOUBLE_EQ(distance_to_segment(QPointF(13, 4), segment), 5.0);  // past its end
  EXPECT_DOUBLE_EQ(distance_to_segment(QPointF(-3, 0), QLineF(QPointF(1, 1), QPointF(1, 1))),
                   std::hypot(4.0, 1.0));
}

TEST(LegendFlow, FillsColumnsInOrderAndKeepsHeadingsWithTheirRows) {
  const std::vector<FlowRow> rows = {{10, true}, {10, false}, {10, false}, {10, true}, {10, false}};
  EXPECT_EQ(flow_into_columns(rows, 50), (std::vector<int>{0, 0, 0, 0, 0}));
  EXPECT_EQ(flow_into_columns(rows, 30), (std::vector<int>{0, 0, 0, 1, 1}));
  // A heading that would end a column moves on with its row.
  EXPECT_EQ(flow_into_columns(rows, 40), (std::vector<int>{0, 0, 0, 1, 1}));
  EXPECT_EQ(flow_into_columns({{80, false}, {10, false}}, 50), (std::vector<int>{0, 1}));
}

// At a 1280x720 projector's panel size in 24 px type the legend of a class's sixteen batch
// sizes leaves out its least needed part and says so; with the room of 1920x1080 it shows all.
TEST(RooflinePanel, LegendDropsItsLeastNeededPartOnlyWhenShortOfRoom) {
  for (const auto& [size, hidden] :
       {std::pair{QSize(1280, 460), QStringList{QStringLiteral("judged against")}},
        std::pair{QSize(1920, 820), QStringList{}}, std::pair{QSize(900, 600), QStringList{}}}) {
    RooflinePanel panel;
    panel.set_snapshot(testing::synthetic_roofline_class());
    if (size.width() > 1000) {
      QFont font = panel.font();
      font.setPointSizeF(18);
      panel.setFont(font);
    }
    panel.resize(size);
    panel.grab();
    EXPECT_EQ(panel.hidden_legend_sections(), hidden) << size.width() << "x" << size.height();
  }
}

}  // namespace
}  // namespace servescope::widgets

namespace servescope::widgets {
namespace {

// A raised roof's note joins the legend: at lecture size it still fits, and reads at 7:1.
TEST(RooflinePanel, RaisedNoteFitsAndReadsAtLectureSize) {
  for (const ThemeKind kind : {ThemeKind::kLight, ThemeKind::kDark}) {
    set_theme(kind, true);
    for (const QSize size : {QSize(1280, 460), QSize(1920, 820)}) {
      RooflineSnapshot s = testing::synthetic_roofline_class();
      s.memory_raised = true;
      s.compute_raised = true;
      s.memory_raised_by = QStringLiteral("a step of this run");
      RooflinePanel panel;
      panel.set_snapshot(s);
      QFont font = panel.font();
      font.setPointSizeF(18);
      panel.setFont(font);
      panel.resize(size);
      const QImage image = panel.grab().toImage();
      const auto texts = testing::painted_texts(panel);
      for (const std::string& fault : testing::layout_faults(texts, QRectF(panel.rect())))
        ADD_FAILURE() << size.width() << "x" << size.height() << ": " << fault;
      for (const auto& text : testing::rendered_contrast(image, texts))
        EXPECT_GE(text.ratio, 7.0) << text.text.text.toStdString();
    }
  }
  set_theme(ThemeKind::kLight);
}

// A lecturer saw the outline around the highlighted points run through the cache roof's
// label: labels are placed clear of the band the outline takes around the element.
TEST(RooflinePanel, NoLabelLiesUnderTheOutlineOfAHighlightedElement) {
  set_theme(ThemeKind::kLight, true);
  for (const QSize size : {QSize(1280, 460), QSize(1920, 820), QSize(900, 600)}) {
    RooflinePanel panel;
    panel.set_snapshot(testing::synthetic_roofline_class());
    QFont font = panel.font();
    font.setPointSizeF(18);
    panel.setFont(font);
    panel.resize(size);
    (void)panel.grab();  // laid out: the element is where it is painted
    for (const QString& element : panel.highlight_elements()) {
      ASSERT_TRUE(panel.set_highlight(element));
      (void)panel.grab();
      const ElementShape parts = panel.element_parts(element);
      const double band = QFontMetricsF(panel.font()).height() * 0.3;
      const std::vector<testing::PaintedText> texts = testing::painted_texts(panel);
      // And never text over text. (Lecture type in a 900 px wide window, no lecture's room,
      // has places for neither: there a figure goes over the outline rather than a label.)
      if (size.width() < 1280) continue;
      for (const std::string& fault : testing::layout_faults(texts, QRectF(panel.rect())))
        ADD_FAILURE() << element.toStdString() << " at " << size.width() << ": " << fault;
      for (const testing::PaintedText& text : texts) {
        for (const QRectF& area : parts.areas) {
          const bool on_band = text.box.intersects(area.adjusted(-band, -band, band, band)) &&
                               !area.contains(text.box);
          EXPECT_FALSE(on_band) << element.toStdString() << " at " << size.width() << "x"
                                << size.height() << ": \"" << text.text.toStdString() << "\" "
                                << text.box.x() << "," << text.box.y() << " " << text.box.width()
                                << "x" << text.box.height() << " area " << area.x() << ","
                                << area.y() << " " << area.width() << "x" << area.height();
        }
      }
    }
  }
  set_theme(ThemeKind::kLight);
}

}  // namespace
}  // namespace servescope::widgets
