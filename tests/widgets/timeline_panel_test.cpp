#include "widgets/timeline_panel.h"

#include <gtest/gtest.h>

#include <QImage>
#include <QPixmap>
#include <QStringList>

#include "tests/widgets/synthetic_snapshots.h"
#include "tests/widgets/text_probe.h"
#include "widgets/theme.h"

namespace servescope::widgets {
namespace {

QRgb pixel_at(const QImage& image, QPointF p) {
  const qreal dpr = image.devicePixelRatioF();
  return image.pixelColor(qRound(p.x() * dpr), qRound(p.y() * dpr)).rgb();
}

// Request 7 waits 100 ms, prefills 30 tokens in two chunks (20 ms), decodes 10 steps (60 ms);
// request 8 (the user's) arrives 50 ms later, waits 5 ms and is still prefilling.
TimelineSnapshot two_requests() {
  TimelineSnapshot snap;
  snap.policy = QStringLiteral("static batching, wait 200 ms");
  snap.own_requests = OwnRequests({8});
  RequestLifeRow first;
  first.request = 7;
  first.arrival_ms = 1000.0;
  first.bars = {{LifeStageView::kQueued, 1000.0, 1100.0},
                {LifeStageView::kPrefill, 1100.0, 1110.0, 1, 16},
                {LifeStageView::kPrefill, 1110.0, 1120.0, 1, 14},
                {LifeStageView::kDecode, 1120.0, 1180.0, 10, 10}};
  first.first_token_ms = 1119.5;
  first.ttft_ms = 119.5;
  first.tpot_ms = 6.0;
  first.output_tokens = 11;
  first.finished = true;
  first.finish_reason = QStringLiteral("max tokens");
  RequestLifeRow second;
  second.request = 8;
  second.arrival_ms = 1050.0;
  second.bars = {{LifeStageView::kQueued, 1050.0, 1055.0},
                 {LifeStageView::kPrefill, 1055.0, 1200.0, 1, 40}};
  snap.rows = {first, second};
  snap.now_ms = 1200.0;
  return snap;
}

TimelinePanel& painted(TimelinePanel& panel, const TimelineSnapshot& snap, QSize size) {
  panel.set_snapshot(snap);
  panel.resize(size);
  panel.grab();
  return panel;
}

TEST(TimelinePanel, BarsMeetEndToStartAndTheirWidthsFollowTheirTimes) {
  TimelinePanel panel;
  painted(panel, two_requests(), QSize(1000, 500));
  ASSERT_EQ(panel.first_shown_row(), 0u);
  const QRectF queued = panel.bar_rect(0, 0);
  const QRectF chunk1 = panel.bar_rect(0, 1);
  const QRectF chunk2 = panel.bar_rect(0, 2);
  const QRectF decode = panel.bar_rect(0, 3);
  ASSERT_FALSE(queued.isEmpty());
  EXPECT_NEAR(queued.right(), chunk1.left(), 0.01);
  EXPECT_NEAR(chunk1.right(), chunk2.left(), 0.01);
  EXPECT_NEAR(chunk2.right(), decode.left(), 0.01);
  // 100 ms queued against 60 ms decoding, on one axis.
  EXPECT_NEAR(queued.width() / decode.width(), 100.0 / 60.0, 0.02);
  // The later request's row is below, starting 50 ms to the right.
  const QRectF later = panel.bar_rect(1, 0);
  EXPECT_GT(later.top(), queued.bottom());
  EXPECT_NEAR(later.left() - queued.left(), queued.width() / 2, 0.5);
  EXPECT_TRUE(panel.bar_rect(2, 0).isEmpty());
}

TEST(TimelinePanel, HoverSaysEachStretchAndTheRequestsTtftAndTpot) {
  TimelinePanel panel;
  painted(panel, two_requests(), QSize(1000, 500));
  EXPECT_EQ(panel.tooltip_at(panel.bar_rect(0, 0).center()),
            "Request 7 waited 100 ms in the queue: no step had run any of its tokens yet.");
  EXPECT_TRUE(panel.tooltip_at(panel.bar_rect(0, 2).center())
                  .startsWith("Request 7, prefill chunk 2 of 2: 14 prompt tokens, 10 ms"))
      << panel.tooltip_at(panel.bar_rect(0, 2).center()).toStdString();
  EXPECT_EQ(panel.tooltip_at(panel.bar_rect(0, 3).center()),
            "Request 7 decoding: 10 steps, one token each, 60 ms.");
  // Left of the bars, the row's label: the request's figures.
  const QRectF row = panel.bar_rect(0, 0);
  const QString label = panel.tooltip_at(QPointF(row.left() - 20, row.center().y()));
  EXPECT_TRUE(label.startsWith("Request 7: queued 100 ms, TTFT 120 ms, TPOT 6 ms, 11 output "
                               "tokens; finished (max tokens)."))
      << label.toStdString();
  const QRectF own = panel.bar_rect(1, 1);
  EXPECT_TRUE(panel.tooltip_at(QPointF(row.left() - 20, own.center().y()))
                  .startsWith("Your request 8: queued 5 ms, 0 output tokens; still running"));
}

TEST(TimelinePanel, TheQueueSummaryIsOverTheRowsDrawn) {
  TimelinePanel panel;
  painted(panel, two_requests(), QSize(1000, 500));
  EXPECT_EQ(panel.queue_summary(),
            "Waited in the queue: mean 52.5 ms, longest 100 ms (request 7), over 2 requests");
}

TEST(TimelinePanel, ManyRequestsShowTheNewestThatFit) {
  TimelinePanel panel;
  painted(panel, testing::synthetic_timeline(200), QSize(900, 500));
  const size_t first = panel.first_shown_row();
  EXPECT_GT(first, 150u);
  EXPECT_LT(first, 199u);
  EXPECT_TRUE(panel.bar_rect(first - 1, 0).isEmpty());
  EXPECT_FALSE(panel.bar_rect(199, 0).isEmpty());
  EXPECT_GE(panel.bar_rect(199, 0).height(), 8.0);  // rows stay tall enough to see
}

TEST(TimelinePanel, StagesKeepThePanelsSharedColours) {
  set_theme(ThemeKind::kLight);
  TimelinePanel panel;
  painted(panel, two_requests(), QSize(1000, 500));
  const QImage image = panel.grab().toImage();
  EXPECT_EQ(pixel_at(image, panel.bar_rect(0, 3).center()), theme().decode.rgb());
  EXPECT_EQ(pixel_at(image, panel.bar_rect(0, 0).center()), theme().surface.rgb());
}

TEST(TimelinePanel, CsvHasOneRowPerStretchWithItsDuration) {
  TimelinePanel panel;
  panel.set_snapshot(two_requests());
  const QStringList lines = panel.csv().trimmed().split('\n');
  ASSERT_EQ(lines.size(), 1 + 6);
  EXPECT_EQ(lines[0], "request,yours,stage,start_ms,end_ms,duration_ms,steps,tokens");
  EXPECT_EQ(lines[1], "7,0,queued,1000.000,1100.000,100.000,0,0");
  EXPECT_EQ(lines[3], "7,0,prefill,1110.000,1120.000,10.000,1,14");
  EXPECT_EQ(lines[6], "8,1,prefill,1055.000,1200.000,145.000,1,40");
}

TEST(TimelinePanel, TheQueuedBarsAndFirstTokensCanBeHighlighted) {
  TimelinePanel panel;
  painted(panel, two_requests(), QSize(1000, 500));
  EXPECT_TRUE(panel.set_highlight("queued"));
  EXPECT_TRUE(panel.element_shape("queued").contains(panel.bar_rect(0, 0).center()));
  EXPECT_TRUE(panel.set_highlight("first-token"));
  EXPECT_FALSE(panel.element_shape("first-token").isEmpty());
}

TEST(TimelinePanel, NoTextOverlapsOrIsCutAtSmallAndLargeSizes) {
  for (const ThemeKind kind : {ThemeKind::kLight, ThemeKind::kDark}) {
    set_theme(kind);
    for (const QSize size : {QSize(560, 320), QSize(900, 560), QSize(1400, 800)}) {
      TimelinePanel panel;
      panel.set_snapshot(testing::synthetic_timeline(24));
      panel.resize(size);
      const std::vector<std::string> faults = testing::layout_faults(
          testing::painted_texts(panel), QRectF(QPointF(0, 0), QSizeF(size)));
      EXPECT_TRUE(faults.empty()) << size.width() << "x" << size.height() << ": " << faults.front();
    }
  }
  set_theme(ThemeKind::kLight);
}

TEST(TimelinePanel, AnEmptyTimelineAsksForAGeneration) {
  TimelinePanel panel;
  panel.resize(800, 500);
  const std::vector<testing::PaintedText> texts = testing::painted_texts(panel);
  ASSERT_FALSE(texts.empty());
  EXPECT_TRUE(texts.front().text.startsWith("No requests yet")) << texts.front().text.toStdString();
}

}  // namespace
}  // namespace servescope::widgets
