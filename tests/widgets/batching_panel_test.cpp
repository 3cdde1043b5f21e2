#include "widgets/batching_panel.h"

#include <gtest/gtest.h>

#include <QImage>
#include <algorithm>
#include <QPixmap>
#include <QStringList>
#include <memory>

#include "tests/widgets/lecture_room.h"
#include "tests/widgets/synthetic_snapshots.h"
#include "tests/widgets/text_probe.h"
#include "widgets/theme.h"

namespace servescope::widgets {
namespace {

SlotCell cell(int64_t request, SlotState state) { return {request, state}; }
const SlotCell kEmpty{};

// The colour painted at `p` in widget coordinates.
QRgb pixel_at(const QImage& image, QPointF p) {
  const qreal dpr = image.devicePixelRatioF();
  return image.pixelColor(qRound(p.x() * dpr), qRound(p.y() * dpr)).rgb();
}

// 3 slots over 4 steps: request 5 prefills then decodes, request 9 joins, request 5 is
// preempted and recomputed.
BatchingSnapshot small_batch() {
  BatchingSnapshot snap;
  snap.slot_count = 3;
  snap.policy = "continuous batching";
  snap.steps = {
      {10, {cell(5, SlotState::kPrefill), kEmpty, kEmpty}},
      {11, {cell(5, SlotState::kDecode), cell(9, SlotState::kPrefill), kEmpty}},
      {12, {kEmpty, cell(9, SlotState::kDecode), kEmpty}},
      {13,
       {cell(5, SlotState::kRecompute), cell(9, SlotState::kDecode), cell(2, SlotState::kDecode)}},
  };
  snap.requests = {{5, 12.5, 4.0, 3, false}, {9, 20.0, 0.0, 1, false}};
  return snap;
}

TEST(BatchingPanel, OccupancyIsSlotsInUseOverSlots) {
  BatchingPanel panel;
  panel.set_snapshot(small_batch());
  const std::vector<double> occ = panel.occupancy();
  ASSERT_EQ(occ.size(), 4u);
  EXPECT_DOUBLE_EQ(occ[0], 1.0 / 3);
  EXPECT_DOUBLE_EQ(occ[1], 2.0 / 3);
  EXPECT_DOUBLE_EQ(occ[2], 1.0 / 3);
  EXPECT_DOUBLE_EQ(occ[3], 1.0);
  EXPECT_DOUBLE_EQ(panel.mean_occupancy(), (1.0 + 2.0 + 1.0 + 3.0) / 12.0);
}

TEST(BatchingPanel, LegendNamesYourRequestThenTheClassmatesThenTheSlotStates) {
  BatchingPanel panel;
  BatchingSnapshot snap = small_batch();
  panel.set_snapshot(snap);
  const QStringList states = {"prefill (hatched)", "decode (solid)",
                              "recompute after preemption (cross-hatched)", "empty slot"};
  EXPECT_EQ(panel.legend_labels(), QStringList{"classmates (hover for the number)"} + states);
  snap.own_requests = OwnRequests({5});
  panel.set_snapshot(snap);
  EXPECT_EQ(panel.legend_labels(),
            (QStringList{"your request 5", "classmates (hover for the number)"} + states));
}

TEST(BatchingPanel, YourRequestHasOneColourAndNeighbouringClassmatesTwoTones) {
  set_theme(ThemeKind::kLight);
  BatchingPanel panel;
  BatchingSnapshot snap = small_batch();
  snap.own_requests = OwnRequests({5});
  panel.set_snapshot(snap);
  panel.resize(1200, 700);
  const QImage image = panel.grab().toImage();
  const auto color_at = [&image](QPointF p) { return pixel_at(image, p); };
  EXPECT_EQ(color_at(panel.cell_rect(11, 0)->center()), theme().own_request.rgb());  // decode
  EXPECT_EQ(color_at(panel.cell_rect(12, 1)->center()), theme().classmate_alternate.rgb());  // 9
  EXPECT_EQ(color_at(panel.cell_rect(13, 2)->center()), theme().classmate.rgb());            // 2
  EXPECT_EQ(panel.tooltip_at(panel.cell_rect(13, 0)->center()),
            "Step 13, slot 0: your request 5, recompute.");
}

TEST(BatchingPanel, ASlotHandedToAnotherRequestShowsTheHandOver) {
  // Requests 4 and 6 share a tone: the gap between them says the slot changed hands.
  set_theme(ThemeKind::kLight);
  BatchingSnapshot snap;
  snap.slot_count = 1;
  snap.steps = {{1, {cell(4, SlotState::kDecode)}},
                {2, {cell(4, SlotState::kDecode)}},
                {3, {cell(6, SlotState::kDecode)}}};
  BatchingPanel panel;
  panel.set_snapshot(snap);
  panel.resize(1200, 700);
  const QImage image = panel.grab().toImage();
  const auto color_at = [&image](QPointF p) { return pixel_at(image, p); };
  const QRectF second = *panel.cell_rect(2, 0), third = *panel.cell_rect(3, 0);
  EXPECT_EQ(color_at(QPointF(second.right() - 2, second.center().y())), theme().classmate.rgb());
  EXPECT_EQ(color_at(QPointF(third.left() + 0.5, third.center().y())), theme().surface.rgb());
  EXPECT_EQ(color_at(third.center()), theme().classmate.rgb());
  // Within one request's run there is no gap.
  EXPECT_EQ(color_at(QPointF(second.left() + 0.5, second.center().y())),
            theme().classmate.rgb());
}

TEST(BatchingPanel, TheLatencyTableKeepsYourRequestAmongManyClassmates) {
  BatchingSnapshot snap = small_batch();
  snap.requests.clear();
  for (int64_t r = 100; r < 140; ++r) snap.requests.push_back({r, 10.0, 2.0, 8, false});
  snap.own_requests = OwnRequests({101});
  BatchingPanel panel;
  panel.set_snapshot(snap);
  panel.resize(1200, 700);
  QStringList painted;
  for (const testing::PaintedText& text : testing::painted_texts(panel)) painted << text.text;
  EXPECT_TRUE(painted.contains("request 101"));   // yours, though older than every row shown
  EXPECT_TRUE(painted.contains("request 139"));   // the newest
  EXPECT_FALSE(painted.contains("request 102"));  // the oldest of the rest gave way
  const auto earlier = std::find_if(painted.begin(), painted.end(), [](const QString& s) {
    return s.contains("earlier requests in the CSV");
  });
  ASSERT_NE(earlier, painted.end());
  // Every request is either a row or counted as earlier.
  const int rows = int(std::count_if(painted.begin(), painted.end(), [](const QString& s) {
    return s.startsWith("request 1");
  }));
  EXPECT_EQ(earlier->split(' ').front().toInt() + rows, 40);
}

TEST(BatchingPanel, SlotLabelsNeverCrowdEachOtherAtAnyHeight) {
  // The last of 16 slots was pulled inside the chart onto slot 12's label (5 px apart).
  BatchingSnapshot snap;
  snap.slot_count = 16;
  for (int64_t step = 0; step < 40; ++step) {
    BatchStep row{step, std::vector<SlotCell>(16, cell(step % 7, SlotState::kDecode))};
    snap.steps.push_back(row);
  }
  BatchingPanel panel;
  panel.set_snapshot(snap);
  QFont lecture = panel.font();
  lecture.setPointSizeF(18);  // 24 px
  panel.setFont(lecture);
  for (int height = 380; height <= 900; height += 3) {
    panel.resize(1280, height);
    std::vector<QRectF> labels;
    for (const testing::PaintedText& text : testing::painted_texts(panel)) {
      if (text.text.startsWith("slot ")) labels.push_back(text.box);
    }
    ASSERT_GE(labels.size(), 2u) << height;
    for (size_t i = 1; i < labels.size(); ++i) {
      EXPECT_GE(labels[i].top(), labels[i - 1].bottom() - 1.0) << "height " << height;
    }
  }
}

TEST(BatchingPanel, EmptySweepAsksForTheSweepButton) {
  BatchingPanel panel;
  panel.set_snapshot(small_batch());
  EXPECT_TRUE(panel.sweep_note().contains("press Sweep"));
  BatchingSnapshot swept = small_batch();
  swept.sweep = {{1, 200.0, 5.0}, {4, 680.0, 5.9}};
  panel.set_snapshot(swept);
  EXPECT_TRUE(panel.sweep_note().isEmpty());
}

TEST(BatchingPanel, ASweepBeforeAnyLiveBatchTakesThePanel) {
  // The sweep runs on engines of its own: its points can come before the live engine's steps.
  BatchingPanel panel;
  panel.resize(900, 600);
  BatchingSnapshot swept;
  swept.sweep = {{1, 200.0, 5.0}, {2, 390.0, 5.1}, {4, 680.0, 5.9}};
  panel.set_snapshot(swept);
  panel.grab();
  const QRectF sweep = panel.element_shape("sweep").boundingRect();
  ASSERT_FALSE(sweep.isEmpty());
  EXPECT_GT(sweep.width(), 0.9 * 900 - 24);  // the whole width, less the margins
  EXPECT_TRUE(panel.element_shape("slots").isEmpty());
  EXPECT_TRUE(panel.tooltip_at(sweep.center() + QPointF(-sweep.width() / 4, 0))
                  .contains("tokens per second"));
}

TEST(BatchingPanel, HeatmapCellsShowTheRequestHoldingTheSlot) {
  set_theme(ThemeKind::kLight);
  BatchingPanel panel;
  panel.set_snapshot(small_batch());
  panel.resize(1200, 700);
  const QImage image = panel.grab().toImage();
  const auto color_at = [&image](QPointF p) { return pixel_at(image, p); };

  // Decode cells are solid in the request's colour; empty slots keep the surface colour.
  const std::optional<QRectF> decode = panel.cell_rect(12, 1);
  ASSERT_TRUE(decode.has_value());
  EXPECT_EQ(color_at(decode->center()), theme().classmate_alternate.rgb());  // request 9
  const std::optional<QRectF> empty = panel.cell_rect(12, 0);
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(color_at(empty->center()), theme().surface.rgb());

  // Rows are slots top to bottom, columns steps left to right, and the inverse agrees.
  const QRectF first = *panel.cell_rect(10, 0);
  const QRectF later = *panel.cell_rect(13, 2);
  EXPECT_LT(first.right(), later.left());
  EXPECT_LT(first.bottom(), later.top());
  for (int64_t step : {10, 11, 12, 13}) {
    for (int slot = 0; slot < 3; ++slot) {
      const auto id = panel.cell_at(panel.cell_rect(step, slot)->center());
      ASSERT_TRUE(id.has_value());
      EXPECT_EQ(id->step_index, step);
      EXPECT_EQ(id->slot, slot);
    }
  }
  EXPECT_FALSE(panel.cell_rect(9, 0).has_value());
  EXPECT_FALSE(panel.cell_rect(10, 3).has_value());
  EXPECT_EQ(panel.tooltip_at(panel.cell_rect(13, 0)->center()),
            "Step 13, slot 0: request 5, recompute.");
}

TEST(BatchingPanel, LongHistoriesShowTheMostRecentStepsThatFit) {
  BatchingSnapshot snap;
  snap.slot_count = 2;
  for (int64_t i = 0; i < 2000; ++i)
    snap.steps.push_back({i, {cell(i % 3, SlotState::kDecode), kEmpty}});
  BatchingPanel panel;
  panel.set_snapshot(snap);
  panel.resize(800, 600);
  panel.grab();
  EXPECT_FALSE(panel.cell_rect(0, 0).has_value());
  const std::optional<QRectF> last = panel.cell_rect(1999, 0);
  ASSERT_TRUE(last.has_value());
  EXPECT_GE(last->width(), 3.9);  // cells stay wide enough to see
}

TEST(BatchingPanel, TheOccupancyHeadlineIsTheMeanOfTheStepsTheChartDraws) {
  // A class filled all 16 slots for 400 steps, then one user alone for 112: the chart, which
  // fits fewer than 112 steps, shows 1 of 16 slots in use, and so must its headline (it said
  // 79.5%, the mean over every step kept, before).
  BatchingSnapshot snap;
  snap.slot_count = 16;
  for (int64_t i = 0; i < 512; ++i) {
    BatchStep step{i, std::vector<SlotCell>(16)};
    for (int slot = 0; slot < (i < 400 ? 16 : 1); ++slot) {
      step.cells[size_t(slot)] = cell(slot, SlotState::kDecode);
    }
    snap.steps.push_back(std::move(step));
  }
  BatchingPanel panel;
  panel.set_snapshot(snap);
  panel.resize(800, 600);
  panel.grab();
  const size_t first = panel.first_shown_step();
  ASSERT_GT(first, 400u);
  EXPECT_TRUE(panel.cell_rect(snap.steps[first].index, 0).has_value());
  EXPECT_FALSE(panel.cell_rect(snap.steps[first - 1].index, 0).has_value());
  const std::vector<double> occ = panel.occupancy();
  double sum = 0.0;
  for (size_t i = first; i < occ.size(); ++i) sum += occ[i];
  EXPECT_DOUBLE_EQ(panel.mean_occupancy(), sum / double(occ.size() - first));
  EXPECT_DOUBLE_EQ(panel.mean_occupancy(), 1.0 / 16.0);
  EXPECT_TRUE(panel.occupancy_heading().contains("mean 6.25%"))
      << panel.occupancy_heading().toStdString();
  // It also says the chart holds only the latest steps: a wider window would draw more.
  EXPECT_TRUE(panel.occupancy_heading().contains(
      QString("over the last %1 steps (of 512)").arg(512 - first)))
      << panel.occupancy_heading().toStdString();
}

TEST(BatchingPanel, TooltipsExplainTpotByItsStepsAndTheSweepByItsTotals) {
  RequestLatency r{7, 30.0, 6.73, 32, true};
  EXPECT_EQ(tpot_explanation(r), "Request 7: TPOT 6.73 ms.");  // its steps unknown
  r.tpot_steps = 31;
  r.tpot_step_ms = 2.5;
  r.tpot_gap_ms = 4.23;
  EXPECT_EQ(tpot_explanation(r).toStdString(),
            "Request 7: TPOT 6.73 ms = 2.50 ms mean step time of the 31 decode steps it rode + "
            "4.23 ms between steps, per token.");
  const SweepPoint p{8, 2560.0, 2.5, 6.4, 2.4, 2.7};
  EXPECT_EQ(sweep_point_text(p).toStdString(),
            "batch 8: 2560 tokens/s = 6.40 tokens per step / 2.50 ms per step (median run; all "
            "runs 2.40-2.70 ms per step)");
}

// The chart is one sweep; a lesson's figure may be a median over several. The chart says which
// it is and gives its own ratios (a tester read 2,688 / 733 = 3.67x off the chart while the
// lesson said "a median of 3.4x" over three sweeps).
TEST(BatchingPanel, TheSweepSummarySaysItIsTheLastSweepAndGivesItsOwnRatios) {
  EXPECT_TRUE(sweep_summary({}).isEmpty());
  const std::vector<SweepPoint> sweep = {{1, 733.0, 1.364}, {4, 3287.0, 1.217}, {8, 2688.0, 2.976}};
  EXPECT_EQ(sweep_summary(sweep).toStdString(),
            "The last sweep, each size's median run (bars: all its runs). Tokens/s against batch "
            "1: 4: 4.48x, 8: 3.67x");
  EXPECT_EQ(sweep_summary({{4, 3287.0, 1.217}}).toStdString(),
            "The last sweep, each size's median run (bars: all its runs).");
}

TEST(BatchingPanel, TheSweepTooltipSaysWhatEachSizeServed) {
  BatchingPanel panel;
  panel.resize(900, 600);
  BatchingSnapshot swept;
  swept.sweep = {{1, 200.0, 5.0, 1.0, 4.5, 6.0}, {4, 680.0, 5.9, 4.0, 5.5, 7.0}};
  swept.sweep_workload = "2 requests per slot";
  panel.set_snapshot(swept);
  panel.grab();
  const QRectF sweep = panel.element_shape("sweep").boundingRect();
  const QString tip = panel.tooltip_at(sweep.center() + QPointF(sweep.width() / 4, 0));
  EXPECT_TRUE(tip.contains("Each size served 2 requests per slot.")) << tip.toStdString();
  EXPECT_TRUE(tip.contains("The last sweep")) << tip.toStdString();
}

TEST(BatchingPanel, CsvHasOneRowPerStepAndSlot) {
  BatchingPanel panel;
  panel.set_snapshot(small_batch());
  const QStringList rows = panel.csv().split('\n', Qt::SkipEmptyParts);
  ASSERT_EQ(rows.size(), 1 + 4 * 3);
  EXPECT_EQ(rows[0], "step,slot,request,state");
  EXPECT_EQ(rows[1], "10,0,5,prefill");
  EXPECT_EQ(rows[2], "10,1,,empty");
  EXPECT_EQ(rows[10], "13,0,5,recompute");
}

// A class's run in a panel `size` large at `points` type, painted once.
std::unique_ptr<BatchingPanel> class_run_at(QSize size, qreal points, const QString& highlight) {
  auto panel = std::make_unique<BatchingPanel>();
  panel->set_snapshot(testing::synthetic_batching_class(true));
  testing::paint_in_lecture_room(*panel, highlight, size);
  QFont font = panel->font();
  font.setPointSizeF(points);  // the room in lines, not in pixels, decides
  panel->setFont(font);
  panel->grab();
  return panel;
}

bool painted(const BatchingPanel& panel, const char* element) {
  return !panel.element_shape(QString::fromLatin1(element)).isEmpty();
}

QString hidden_note(BatchingPanel& panel) {
  return testing::painted_text_starting(panel, "Hidden for room");
}

TEST(BatchingPanel, AProjectorsRoomKeepsTheSlotsAndTheLatencyTableAndSaysWhatIsHidden) {
  auto panel = class_run_at(QSize(1280, 460), 18, {});
  EXPECT_TRUE(painted(*panel, "slots"));
  EXPECT_TRUE(painted(*panel, "latencies"));
  EXPECT_FALSE(painted(*panel, "sweep"));
  EXPECT_EQ(hidden_note(*panel),
            "Hidden for room: occupancy chart, batch-size sweep. A larger window or T (hide text) "
            "shows them.");
}

TEST(BatchingPanel, AHighlightedSweepStaysOnScreenInTheLatencyTablesPlace) {
  auto panel = class_run_at(QSize(1280, 460), 18, "sweep");
  EXPECT_TRUE(painted(*panel, "slots"));
  EXPECT_TRUE(painted(*panel, "sweep"));
  EXPECT_FALSE(painted(*panel, "latencies"));
  EXPECT_TRUE(hidden_note(*panel).contains("latency table"));
}

TEST(BatchingPanel, TheRoomInLinesDecidesNotThePixels) {
  // The same pixels in small type hold every chart.
  auto panel = class_run_at(QSize(1280, 460), 7, {});
  EXPECT_TRUE(painted(*panel, "slots"));
  EXPECT_TRUE(painted(*panel, "latencies"));
  EXPECT_TRUE(painted(*panel, "sweep"));
  EXPECT_TRUE(hidden_note(*panel).isEmpty());
}

TEST(BatchingPanel, WithoutTheOccupancyChartItsMeanJoinsTheSlotsHeading) {
  auto panel = class_run_at(QSize(1280, 460), 18, {});
  const QString mean = chart::format_number(100.0 * panel->mean_occupancy(), 3);
  bool found = false;
  for (const auto& text : testing::painted_texts(*panel))
    found = found || text.text == QString("Slots over steps: %1% in use on average").arg(mean);
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace servescope::widgets
