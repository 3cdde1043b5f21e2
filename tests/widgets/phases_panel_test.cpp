#include "widgets/phases_panel.h"

#include <gtest/gtest.h>

#include <QImage>
#include <QStringList>

#include "tests/widgets/lecture_room.h"
#include "tests/widgets/synthetic_snapshots.h"
#include "tests/widgets/text_probe.h"
#include "widgets/theme.h"

namespace servescope::widgets {
namespace {

StepBar step(int64_t index, double start, double end, int64_t prefill, int64_t decode,
             int64_t context) {
  StepBar s;
  s.index = index;
  s.start_ms = start;
  s.end_ms = end;
  s.prefill_tokens = prefill;
  s.decode_tokens = decode;
  s.sequences = decode > 0 ? decode : 1;
  s.context_tokens = context;
  return s;
}

PhasesSnapshot three_phases() {
  PhasesSnapshot snap;
  snap.steps = {step(0, 1000.0, 1040.0, 32, 0, 32), step(1, 1041.0, 1046.0, 0, 1, 33),
                step(2, 1047.0, 1053.0, 0, 1, 34), step(3, 1054.0, 1070.0, 8, 1, 35),
                step(4, 1071.0, 1250.0, 0, 2, 36)};
  snap.prefill_tokens_per_s = 1234.0;
  snap.decode_tokens_per_s = 56.25;
  return snap;
}

TEST(PhasesPanel, ClassifiesStepsByTheTokensTheyProcessed) {
  EXPECT_EQ(phase_of(step(0, 0, 1, 5, 0, 5)), StepPhase::kPrefill);
  EXPECT_EQ(phase_of(step(0, 0, 1, 0, 3, 5)), StepPhase::kDecode);
  EXPECT_EQ(phase_of(step(0, 0, 1, 5, 3, 5)), StepPhase::kMixed);
  EXPECT_EQ(phase_of(step(0, 0, 1, 0, 0, 5)), StepPhase::kIdle);

  PhasesPanel panel;
  panel.set_snapshot(three_phases());
  EXPECT_EQ(panel.step_count(StepPhase::kPrefill), 1);
  EXPECT_EQ(panel.step_count(StepPhase::kDecode), 3);
  EXPECT_EQ(panel.step_count(StepPhase::kMixed), 1);
}

TEST(PhasesPanel, SaysKernelTimesAreNotMeasuredInsteadOfDrawingZeros) {
  PhasesPanel panel;
  panel.set_snapshot(three_phases());
  EXPECT_FALSE(panel.kernels_measured());
  EXPECT_TRUE(panel.kernel_note().contains("not measured")) << panel.kernel_note().toStdString();
  EXPECT_EQ(panel.legend_labels(), (QStringList{"prefill step (many prompt tokens)",
                                                "decode step (one token per sequence)",
                                                "mixed step (prefill above, decode below)"}));
  PhasesSnapshot decode_only = three_phases();
  decode_only.steps = {decode_only.steps[1], decode_only.steps[2]};
  panel.set_snapshot(decode_only);
  EXPECT_EQ(panel.legend_labels(), (QStringList{"decode step (one token per sequence)"}));
  panel.set_snapshot(three_phases());

  PhasesSnapshot measured = three_phases();
  measured.steps[1].kernels_measured = true;
  measured.steps[1].matmul_ms = 3.0;
  panel.set_snapshot(measured);
  EXPECT_TRUE(panel.kernels_measured());
  EXPECT_TRUE(panel.kernel_note().isEmpty());
  const QStringList legend = panel.legend_labels();
  for (const char* kernel : {"matmul", "attention", "norm", "other"}) {
    EXPECT_TRUE(legend.contains(kernel)) << kernel;
  }
}

TEST(PhasesPanel, TimeAxisStartsAtTheFirstStepAndCoversTheLast) {
  PhasesPanel panel;
  panel.set_snapshot(three_phases());
  const chart::Range range = panel.time_axis_ms();
  EXPECT_EQ(range.min, 0.0);
  EXPECT_GE(range.max, 250.0);  // last end 1250 - first start 1000
  EXPECT_LT(range.max, 375.0);  // and not much more
}

TEST(PhasesPanel, DecodeChartPlotsEachPureDecodeStepAgainstItsContext) {
  PhasesPanel panel;
  panel.set_snapshot(three_phases());
  const std::vector<QPointF> points = panel.decode_points();
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[0], QPointF(33, 5.0));
  EXPECT_EQ(points[1], QPointF(34, 6.0));
  EXPECT_EQ(points[2], QPointF(36, 179.0));
}

TEST(PhasesPanel, ThroughputLabelsCarryTheSnapshotRates) {
  PhasesPanel panel;
  panel.set_snapshot(three_phases());
  EXPECT_EQ(panel.throughput_labels(),
            (QStringList{"Prefill: 1234 tokens/s", "Decode: 56.3 tokens/s"}));
}

// With classmates decoding every prompt may share its step with decodes: no prefill-only step
// was measured, which is not a prefill speed of 0 tokens/s.
TEST(PhasesPanel, APhaseWithNoStepOfItsOwnSaysNotMeasuredRatherThanZero) {
  PhasesPanel panel;
  PhasesSnapshot snapshot = three_phases();
  snapshot.prefill_tokens_per_s = 0.0;
  panel.set_snapshot(snapshot);
  EXPECT_EQ(panel.throughput_labels().front(),
            "Prefill: not measured yet");
}

TEST(PhasesPanel, CsvHasAHeaderAndOneRowPerStep) {
  PhasesPanel panel;
  EXPECT_EQ(panel.csv(),
            "step,start_ms,end_ms,duration_ms,phase,prefill_tokens,decode_tokens,sequences,"
            "context_tokens,kernels_measured,matmul_ms,attention_ms,norm_ms,other_ms\n");
  PhasesSnapshot snap = three_phases();
  snap.steps[3].kernels_measured = true;
  snap.steps[3].matmul_ms = 9.5;
  snap.steps[3].attention_ms = 2.25;
  snap.steps[3].norm_ms = 0.5;
  snap.steps[3].other_ms = 1;
  panel.set_snapshot(snap);
  const QStringList rows = panel.csv().split('\n', Qt::SkipEmptyParts);
  ASSERT_EQ(rows.size(), 6);
  EXPECT_EQ(rows[1], "0,1000,1040,40,prefill,32,0,1,32,false,,,,");
  EXPECT_EQ(rows[4], "3,1054,1070,16,mixed,8,1,1,35,true,9.5,2.25,0.5,1");
}

TEST(PhasesPanel, HoveringTheTimeLineFindsTheStepUnderThePointer) {
  PhasesPanel panel;
  panel.set_snapshot(three_phases());
  panel.resize(1200, 700);
  panel.grab();
  // Scan one row through the steps lane: steps appear left to right, each in one run, and the
  // 1 ms gaps between them are too narrow to find at this scale except as neighbours.
  std::vector<size_t> order;
  int y_lane = -1;
  for (int y = 0; y < 700 && y_lane < 0; ++y) {
    if (panel.step_at(QPointF(700, y))) y_lane = y + 5;
  }
  ASSERT_GE(y_lane, 0);
  for (int x = 0; x < 1200; ++x) {
    const std::optional<size_t> step = panel.step_at(QPointF(x, y_lane));
    if (step && (order.empty() || order.back() != *step)) order.push_back(*step);
  }
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4}));
  const std::optional<size_t> first = panel.step_at(QPointF(100, y_lane));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(*first, 0u);
  EXPECT_TRUE(
      panel.tooltip_at(QPointF(100, y_lane)).startsWith("Step 0: 32 prompt tokens prefilled"));
  EXPECT_FALSE(panel.step_at(QPointF(1190, y_lane)).has_value());  // after the last step
}

// Hundreds of decode steps in a lecture's room.
void paint_at_lecture_size(PhasesPanel& panel, const QString& highlight) {
  panel.set_snapshot(testing::synthetic_phases(true, 400));
  testing::paint_in_lecture_room(panel, highlight);
}

bool painted_text_starting(PhasesPanel& panel, const QString& start) {
  return !testing::painted_text_starting(panel, start).isEmpty();
}

TEST(PhasesPanel, InAProjectorsRoomTheTimeLineStaysAndANoteNamesWhatIsHidden) {
  PhasesPanel panel;
  paint_at_lecture_size(panel, {});
  EXPECT_FALSE(panel.element_shape("decode").isEmpty());
  EXPECT_TRUE(panel.element_shape("decode-time").isEmpty());
  EXPECT_TRUE(painted_text_starting(panel, "Hidden for room: decode time chart, throughput."));
}

TEST(PhasesPanel, AHighlightedDecodeTimeChartStaysOnScreen) {
  PhasesPanel panel;
  paint_at_lecture_size(panel, "decode-time");
  EXPECT_FALSE(panel.element_shape("decode-time").isEmpty());
  EXPECT_TRUE(painted_text_starting(panel, "Hidden for room: steps over time."));
}

TEST(PhasesPanel, APrefillLabelOnItsBarHasSevenToOneContrast) {
  set_theme(ThemeKind::kLight, true);
  PhasesPanel panel;
  panel.set_snapshot(testing::synthetic_phases(true));
  panel.resize(1200, 700);
  const QImage image = panel.grab().toImage();
  bool seen = false;
  for (const auto& text : testing::rendered_contrast(image, testing::painted_texts(panel))) {
    if (!text.text.text.endsWith(" tok")) continue;
    seen = true;
    EXPECT_GE(text.ratio, 7.0) << text.text.text.toStdString();
  }
  EXPECT_TRUE(seen);
  set_theme(ThemeKind::kLight);
}

}  // namespace
}  // namespace servescope::widgets
