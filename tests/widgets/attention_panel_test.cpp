#include "widgets/attention_panel.h"

#include <gtest/gtest.h>

#include <QSpinBox>
#include <cmath>

#include "tests/widgets/synthetic_model_snapshots.h"
#include "tests/widgets/text_probe.h"

namespace servescope::widgets {
namespace {

TEST(AttentionMask, PrefillFromZeroSeesTheLowerTriangle) {
  const AttentionSnapshot s = testing::synthetic_attention(7, false);
  EXPECT_TRUE(attention_visible(s, 0, 0));
  EXPECT_FALSE(attention_visible(s, 0, 1));
  EXPECT_TRUE(attention_visible(s, 6, 6));
  EXPECT_TRUE(attention_visible(s, 3, 2));
  EXPECT_FALSE(attention_visible(s, 3, 4));
  EXPECT_EQ(visible_cell_count(s), 7 * 8 / 2);
}

TEST(AttentionMask, DecodeRowSeesEveryCachedToken) {
  const AttentionSnapshot s = testing::synthetic_attention(40, true);
  ASSERT_EQ(s.query_pieces.size(), 1u);
  EXPECT_EQ(visible_cell_count(s), 40);
  EXPECT_TRUE(attention_visible(s, 0, 39));
  EXPECT_FALSE(attention_visible(s, 0, 40));  // beyond the cache
}

TEST(AttentionMask, ShapeMustMatchQueriesTimesKeys) {
  AttentionSnapshot s = testing::synthetic_attention(5, false);
  EXPECT_TRUE(attention_shape_valid(s));
  s.weights.pop_back();
  EXPECT_FALSE(attention_shape_valid(s));
  EXPECT_FALSE(attention_shape_valid(AttentionSnapshot{}));
}

TEST(AttentionColour, ViridisRunsFromPurpleToYellowAndClamps) {
  EXPECT_EQ(viridis(0.0).rgb(), QColor(0x440154).rgb());
  EXPECT_EQ(viridis(1.0).rgb(), QColor(0xFDE725).rgb());
  EXPECT_EQ(viridis(-3.0).rgb(), viridis(0.0).rgb());
  EXPECT_EQ(viridis(7.0).rgb(), viridis(1.0).rgb());
  EXPECT_EQ(viridis(std::nan("")).rgb(), viridis(0.0).rgb());
  // Relative luminance (sRGB, WCAG) grows monotonically, so the scale reads in grey too.
  const auto luminance = [](const QColor& c) {
    const auto linear = [](double v) {
      return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
    };
    return 0.2126 * linear(c.redF()) + 0.7152 * linear(c.greenF()) + 0.0722 * linear(c.blueF());
  };
  for (int i = 1; i <= 20; ++i) {
    EXPECT_GT(luminance(viridis(i / 20.0)), luminance(viridis((i - 1) / 20.0))) << i;
  }
}

TEST(AttentionPanel, PaintsNTimesNPlusOneOverTwoVisibleCellsForAPrefill) {
  for (const int n : {1, 9, 24, 120}) {
    AttentionPanel panel;
    panel.resize(1200, 700);
    panel.set_snapshot(testing::synthetic_attention(n, false));
    (void)panel.grab();
    EXPECT_EQ(panel.painted_visible_cells(), int64_t{n} * (n + 1) / 2) << n;
    EXPECT_EQ(panel.painted_masked_cells(), int64_t{n} * (n - 1) / 2) << n;
  }
}

TEST(AttentionPanel, ColourScaleTopIsTheLargestVisibleWeight) {
  AttentionSnapshot s = testing::synthetic_attention(6, false);
  s.weights[1] = 5.0f;  // row 0 may not see key 1: a masked value must not set the scale
  AttentionPanel panel;
  panel.set_snapshot(s);
  float expected = 0.0f;
  for (int q = 0; q < 6; ++q) {
    for (int k = 0; k <= q; ++k) expected = std::max(expected, s.weights[q * 6 + k]);
  }
  EXPECT_FLOAT_EQ(panel.colour_scale_max(), expected);
  EXPECT_LT(panel.colour_scale_max(), 5.0f);
}

TEST(AttentionPanel, TooltipNamesQueryKeyAndWeight) {
  AttentionSnapshot s = testing::synthetic_attention(10, false);
  AttentionPanel panel;
  panel.resize(800, 600);
  panel.set_snapshot(s);
  (void)panel.grab();
  // Find the cell (row 4, column 2) by scanning, then check its text.
  bool visible_found = false;
  bool masked_found = false;
  for (int y = 0; y < 600; y += 3) {
    for (int x = 0; x < 800; x += 3) {
      const auto cell = panel.cell_at(QPointF(x, y));
      if (!cell) continue;
      const QString text = panel.cell_tooltip(QPointF(x, y));
      if (cell->first == 4 && cell->second == 2 && !visible_found) {
        visible_found = true;
        EXPECT_EQ(text,
                  QStringLiteral("query '%1' (position 4) -> key '%2' (position 2): weight %3")
                      .arg(s.query_pieces[4], s.key_pieces[2])
                      .arg(static_cast<double>(s.weights[4 * 10 + 2]), 0, 'f', 4));
      }
      if (cell->first == 1 && cell->second == 5 && !masked_found) {
        masked_found = true;
        EXPECT_TRUE(text.contains(QStringLiteral("causal mask"))) << text.toStdString();
      }
    }
  }
  EXPECT_TRUE(visible_found);
  EXPECT_TRUE(masked_found);
  EXPECT_TRUE(panel.cell_tooltip(QPointF(1, 1)).isEmpty());
}

TEST(AttentionPanel, SelectorsFollowTheSnapshotAndSignalOnlyUserChoices) {
  AttentionPanel panel;
  std::vector<std::pair<int, int>> requests;
  QObject::connect(&panel, &AttentionPanel::selection_changed,
                   [&](int layer, int head) { requests.emplace_back(layer, head); });
  panel.set_snapshot(testing::synthetic_attention(8, false));  // layer 2 of 6, head 3 of 8
  EXPECT_TRUE(requests.empty());
  EXPECT_EQ(panel.layer_selector()->value(), 2);
  EXPECT_EQ(panel.layer_selector()->maximum(), 5);
  EXPECT_EQ(panel.head_selector()->maximum(), 7);
  panel.head_selector()->setValue(6);
  panel.layer_selector()->setValue(4);
  const std::vector<std::pair<int, int>> expected = {{2, 6}, {4, 6}};
  EXPECT_EQ(requests, expected);
}

TEST(AttentionPanel, CsvHasOneRowPerVisibleCellWithQuotedPieces) {
  AttentionSnapshot s = testing::synthetic_attention(4, false);
  s.key_pieces[1] = s.query_pieces[1] = QStringLiteral(",\"");
  AttentionPanel panel;
  panel.set_snapshot(s);
  const QStringList lines = panel.csv().split('\n', Qt::SkipEmptyParts);
  EXPECT_EQ(lines[0],
            QStringLiteral(
                "layer,head,query_row,query_position,query_piece,key_position,key_piece,weight"));
  EXPECT_EQ(lines.size(), 1 + 4 * 5 / 2);
  EXPECT_TRUE(lines[2].startsWith(QStringLiteral("2,3,1,1,\",\"\"\",0,")));
  EXPECT_EQ(AttentionPanel().csv().count('\n'), 1);  // the header alone
}

// Snapshots no engine should send: weights of the wrong size, NaN and negative weights, a
// first query position beyond the keys or before them.
TEST(AttentionPanel, OddSnapshotsPaintWithoutCrashing) {
  AttentionSnapshot wrong_size = testing::synthetic_attention(6, false);
  wrong_size.weights.resize(5);
  AttentionSnapshot odd_values = testing::synthetic_attention(6, false);
  odd_values.weights[0] = std::nanf("");
  odd_values.weights[7] = -2.0f;
  AttentionSnapshot beyond = testing::synthetic_attention(6, false);
  beyond.first_query_position = 100;
  AttentionSnapshot before = testing::synthetic_attention(6, false);
  before.first_query_position = -10;
  before.layer = 99;  // outside layer_count: the selector clamps, the heading tells the truth
  for (const AttentionSnapshot& s : {wrong_size, odd_values, beyond, before}) {
    AttentionPanel panel;
    panel.set_snapshot(s);
    for (const QSize size : {QSize(1, 1), QSize(200, 150), QSize(1200, 700)}) {
      panel.resize(size);
      EXPECT_FALSE(panel.grab().isNull());
    }
  }
  AttentionPanel panel;
  panel.resize(800, 600);
  panel.set_snapshot(beyond);
  (void)panel.grab();
  EXPECT_EQ(panel.painted_visible_cells(), 36);  // every key is in every query's past
  panel.set_snapshot(before);
  (void)panel.grab();
  EXPECT_EQ(panel.painted_visible_cells(), 0);
  EXPECT_EQ(visible_cell_count(before), 0);
}

TEST(AttentionPanel, TooSmallAsksForRoomInsteadOfSqueezingTheMap) {
  AttentionPanel panel;
  panel.set_snapshot(testing::synthetic_attention(24, false));
  panel.resize(200, 150);
  (void)panel.grab();
  EXPECT_EQ(panel.painted_visible_cells(), 0);
  EXPECT_TRUE(panel.layer_selector()->isHidden());
  panel.resize(panel.minimumSizeHint());
  (void)panel.grab();
  EXPECT_EQ(panel.painted_visible_cells(), 24 * 25 / 2);
  EXPECT_FALSE(panel.layer_selector()->isHidden());
}

}  // namespace
}  // namespace servescope::widgets

namespace servescope::widgets {
namespace {

// A class's context at lecture size (24 px type): a prefill of 150 tokens and one decode step
// over them, no text overlapping, cut or elided.
TEST(AttentionPanel, LongContextFitsLectureSize) {
  for (const bool decode : {false, true}) {
    for (const QSize size : {QSize(1280, 460), QSize(1920, 820)}) {
      AttentionPanel panel;
      panel.set_snapshot(testing::synthetic_attention(150, decode));
      QFont font = panel.font();
      font.setPointSizeF(18);
      panel.setFont(font);
      panel.resize(size);
      for (const std::string& fault :
           testing::layout_faults(testing::painted_texts(panel), QRectF(panel.rect())))
        ADD_FAILURE() << (decode ? "decode " : "prefill ") << size.width() << "x"
                      << size.height() << ": " << fault;
    }
  }
}

}  // namespace
}  // namespace servescope::widgets
