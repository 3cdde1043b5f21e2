#include "widgets/quantisation_panel.h"

#include <gtest/gtest.h>

#include <QTableView>

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QTabWidget>
#include <cmath>
#include <limits>

#include "tests/widgets/synthetic_model_snapshots.h"
#include "tests/widgets/text_probe.h"
#include "widgets/quant_block_view.h"
#include "widgets/quant_variant_model.h"
#include "widgets/quantisation_charts.h"

namespace servescope::widgets {
namespace {

QuantVariantRow row(double memory_bytes, double decode_tokens_per_s, double mean_kl) {
  QuantVariantRow r;
  r.memory_bytes = memory_bytes;
  r.decode_tokens_per_s = decode_tokens_per_s;
  r.mean_kl = mean_kl;
  return r;
}

TEST(QuantSpeedup, IsDecodeTokensOverTheBaselines) {
  const QuantVariantRow baseline = row(20.0, 500.0, 0.0);
  EXPECT_DOUBLE_EQ(decode_speedup(row(3.0, 1250.0, 0.0), baseline), 2.5);
  EXPECT_DOUBLE_EQ(decode_speedup(row(3.0, 1250.0, 0.0), row(20.0, 0.0, 0.0)), 0.0);
}

TEST(QuantDivergence, FirstDifferingTokenByIdThenByPiece) {
  TokenContinuation a{QStringLiteral("a"), {1, 2, 3, 4}, {"w", "x", "y", "z"}};
  TokenContinuation b{QStringLiteral("b"), {1, 2, 9, 4}, {"w", "x", "y", "z"}};
  EXPECT_EQ(first_divergent_token(a, b), 2);  // ids decide: the pieces are equal
  b.ids = {1, 2, 3, 4};
  EXPECT_EQ(first_divergent_token(a, b), -1);
  b.ids = {1, 2, 3, 4, 5};
  b.pieces.push_back(QStringLiteral("!"));
  EXPECT_EQ(first_divergent_token(a, b), 4);  // a is a prefix of b
  TokenContinuation c{QStringLiteral("c"), {}, {"w", "q"}};
  TokenContinuation d{QStringLiteral("d"), {}, {"w", "x"}};
  EXPECT_EQ(first_divergent_token(c, d), 1);  // no ids: pieces decide
  EXPECT_EQ(first_divergent_token(TokenContinuation{}, TokenContinuation{}), -1);
}

TEST(QuantVariantModel, HasOneRowPerVariantAndNamedColumns) {
  QuantVariantModel model;
  const QuantisationSnapshot s = testing::synthetic_quantisation();
  model.set_variants(s.variants, s.cost_unit, s.judge);
  EXPECT_EQ(model.rowCount(), 6);
  EXPECT_EQ(model.columnCount(), 12);
  QStringList headers;
  for (int c = 0; c < model.columnCount(); ++c) {
    headers << model.headerData(c, Qt::Horizontal).toString();
    EXPECT_FALSE(model.headerData(c, Qt::Horizontal, Qt::ToolTipRole).toString().isEmpty()) << c;
  }
  const QStringList expected = {"Weights",
                                "KV\ncache",
                                "Size",
                                "Bits/\nweight",
                                "Mean KL\n(nats)",
                                "Top-1\n(%)",
                                "Decode\n(tok/s)",
                                "Speed-up\n(x)",
                                "TTFT (ms)\np50 / p99",
                                "TPOT (ms)\np50 / p99",
                                "Cost\n(device ms)",
                                "Verdict"};
  EXPECT_EQ(headers, expected);
  EXPECT_EQ(model.index(2, QuantVariantModel::kWeights).data().toString(), "q8_0");
  EXPECT_EQ(model.index(2, QuantVariantModel::kKvCache).data().toString(), "f32");
  EXPECT_EQ(model.index(2, QuantVariantModel::kBitsPerWeight).data().toString(), "8.51");
  // Sizes in binary units: 18,460,000 and 4,910,000 bytes.
  EXPECT_EQ(model.index(0, QuantVariantModel::kSize).data().toString(), "17.6 MiB");
  EXPECT_EQ(model.index(2, QuantVariantModel::kSize).data().toString(), "4.68 MiB");
  // The load's own percentiles and cost, as measured (no latency computed from speeds).
  EXPECT_EQ(model.index(2, QuantVariantModel::kTtft).data().toString(), "95 / 160");
  EXPECT_EQ(model.index(2, QuantVariantModel::kTpot).data().toString(), "3.20 / 5.50");
  EXPECT_EQ(model.index(2, QuantVariantModel::kCost).data().toString(), "16.3");
  // 1558 / 556 decode tokens per second.
  EXPECT_EQ(model.index(2, QuantVariantModel::kSpeedup).data().toString(), "2.80");
  EXPECT_EQ(model.index(2, QuantVariantModel::kTop1).data().toString(), "99.1");
  EXPECT_EQ(model.index(0, QuantVariantModel::kVerdict).data().toString(), "baseline");
}

TEST(QuantVariantModel, WithoutARuleNoRowIsJudged) {
  QuantVariantModel model;
  const QuantisationSnapshot s = testing::synthetic_quantisation();
  model.set_variants(s.variants, s.cost_unit, {});
  EXPECT_FALSE(model.judged());
  EXPECT_EQ(model.index(0, QuantVariantModel::kVerdict).data().toString(), "baseline");
  EXPECT_EQ(model.index(2, QuantVariantModel::kVerdict).data().toString(), "\u2014");
  EXPECT_FALSE(model.verdict(2).accepted);
}

// The model asks the snapshot's rule with the row and the limits now set, and shows its answer.
TEST(QuantVariantModel, AsksTheRuleWithTheCurrentLimits) {
  QuantVariantModel model;
  std::vector<std::pair<int, QuantLimits>> asked;
  model.set_variants(testing::synthetic_quantisation().variants, QString(),
                     [&](int row, const QuantLimits& limits) {
                       asked.emplace_back(row, limits);
                       return QuantVerdict{row == 3, {QStringLiteral("because")}};
                     });
  model.set_limits({0.5, 7.0, 1.1});
  EXPECT_EQ(model.index(3, QuantVariantModel::kVerdict).data().toString(), "accept");
  EXPECT_EQ(model.index(4, QuantVariantModel::kVerdict).data().toString(), "reject");
  EXPECT_EQ(model.index(4, QuantVariantModel::kVerdict).data(Qt::ToolTipRole).toString(),
            "Rejected: because.");
  ASSERT_FALSE(asked.empty());
  EXPECT_EQ(asked.back().first, 4);
  EXPECT_DOUBLE_EQ(asked.back().second.max_kl, 0.5);
  EXPECT_DOUBLE_EQ(asked.back().second.max_tpot_ms, 7.0);
  EXPECT_DOUBLE_EQ(asked.back().second.min_speedup, 1.1);
  for (const auto& [row, limits] : asked) EXPECT_NE(row, 0);  // the baseline is never judged
}

TEST(QuantVariantModel, VerdictsFollowTheLimits) {
  QuantVariantModel model;
  const QuantisationSnapshot s = testing::synthetic_quantisation();
  model.set_variants(s.variants, s.cost_unit, s.judge);
  auto verdicts = [&] {
    QStringList v;
    for (int r = 0; r < model.rowCount(); ++r) {
      v << model.index(r, QuantVariantModel::kVerdict).data().toString();
    }
    return v;
  };
  constexpr double kOff = std::numeric_limits<double>::infinity();
  model.set_limits({0.05, kOff, 1.2});
  EXPECT_EQ(verdicts(),
            (QStringList{"baseline", "accept", "accept", "accept", "accept", "accept"}));
  // Mean KL of the Q4_0 rows is 0.0472 and 0.0481; speed-ups 1.78, 2.80, 2.66, 2.20, 2.32.
  model.set_limits({0.01, kOff, 2.5});
  EXPECT_EQ(verdicts(),
            (QStringList{"baseline", "reject", "accept", "accept", "reject", "reject"}));
  EXPECT_TRUE(model.index(1, QuantVariantModel::kVerdict)
                  .data(Qt::ToolTipRole)
                  .toString()
                  .contains(QStringLiteral("speed-up 1.78x")));
}

TEST(QuantisationPanel, UserLimitsRejudgeTheTableAndSignal) {
  QuantisationPanel panel;
  panel.set_snapshot(testing::synthetic_quantisation());
  std::vector<std::pair<double, double>> signalled;  // max KL, min speed-up
  std::vector<double> tpot_signalled;
  QObject::connect(&panel, &QuantisationPanel::limits_changed,
                   [&](double kl, double tpot, double speedup) {
                     signalled.emplace_back(kl, speedup);
                     tpot_signalled.push_back(tpot);
                   });
  EXPECT_TRUE(panel.max_kl_enabled_control()->isChecked());
  EXPECT_DOUBLE_EQ(panel.max_kl_control()->value(), 0.05);
  EXPECT_DOUBLE_EQ(panel.min_speedup_control()->value(), 1.2);
  EXPECT_TRUE(signalled.empty());  // the snapshot's limits are not the user's edit

  panel.max_kl_control()->setValue(0.04);
  ASSERT_EQ(signalled.size(), 1u);
  EXPECT_DOUBLE_EQ(signalled[0].first, 0.04);
  EXPECT_DOUBLE_EQ(signalled[0].second, 1.2);
  EXPECT_FALSE(panel.variant_model().verdict(4).accepted);  // q4_0: KL 0.0472 > 0.04
  EXPECT_TRUE(panel.variant_model().verdict(2).accepted);

  panel.max_kl_enabled_control()->setChecked(false);
  ASSERT_EQ(signalled.size(), 2u);
  EXPECT_TRUE(std::isinf(signalled[1].first));
  EXPECT_TRUE(panel.variant_model().verdict(4).accepted);

  panel.min_speedup_control()->setValue(3.0);
  EXPECT_FALSE(panel.variant_model().verdict(2).accepted);  // 2.80x < 3
  EXPECT_DOUBLE_EQ(panel.limits().min_speedup, 3.0);
  panel.min_speedup_control()->setValue(0.0);

  EXPECT_TRUE(std::isinf(tpot_signalled.back()));  // off until checked
  panel.max_tpot_enabled_control()->setChecked(true);
  panel.max_tpot_control()->setValue(6.0);
  EXPECT_DOUBLE_EQ(tpot_signalled.back(), 6.0);
  EXPECT_TRUE(panel.variant_model().verdict(2).accepted);   // p99 5.5 ms
  EXPECT_FALSE(panel.variant_model().verdict(4).accepted);  // p99 6.8 ms
}

// The variant choice: a box per offered type, checked as chosen; Compare sends the checked
// ones; while a run goes the boxes and Compare wait and Cancel and the progress show.
TEST(QuantisationPanel, ChoosesVariantsAndFollowsARun) {
  QuantisationPanel panel;
  panel.set_snapshot(testing::synthetic_quantisation());
  EXPECT_EQ(panel.checked_types(), (QStringList{"f16", "q8_0", "q4_0"}));
  ASSERT_NE(panel.type_control("q5_1"), nullptr);
  panel.type_control("q5_1")->setChecked(true);
  panel.type_control("f16")->setChecked(false);
  QStringList requested;
  int cancels = 0;
  QObject::connect(&panel, &QuantisationPanel::compare_requested,
                   [&](const QStringList& types) { requested = types; });
  QObject::connect(&panel, &QuantisationPanel::cancel_requested, [&] { ++cancels; });
  panel.compare_control()->click();
  EXPECT_EQ(requested, (QStringList{"q8_0", "q5_1", "q4_0"}));  // in the offered order

  panel.set_run_state({true, QStringLiteral("quality of q5_1"), 0.25, QString()});
  EXPECT_FALSE(panel.compare_control()->isEnabled());
  EXPECT_TRUE(panel.cancel_control()->isEnabled());
  EXPECT_FALSE(panel.type_control("q4_0")->isEnabled());
  EXPECT_EQ(panel.progress_control()->value(), 250);
  EXPECT_TRUE(panel.status_text().contains("quality of q5_1 (25%)"));
  EXPECT_EQ(panel.variant_model().rowCount(), 6);  // the results shown stay meanwhile
  panel.cancel_control()->click();
  EXPECT_EQ(cancels, 1);

  panel.set_run_state({false, QString(), 0.0, QStringLiteral("cancelled")});
  EXPECT_TRUE(panel.compare_control()->isEnabled());
  EXPECT_FALSE(panel.cancel_control()->isEnabled());
  EXPECT_EQ(panel.status_text(), "cancelled");
}

// The block tab paints the block's own numbers: its scale and min with their fp16 bits, the
// formula, every quant, and the error of the block it computes from the values.
TEST(QuantisationPanel, BlockPicturePaintsTheBlocksNumbers) {
  QuantisationPanel panel;
  panel.resize(1200, 800);
  const QuantisationSnapshot s = testing::synthetic_quantisation();
  panel.set_snapshot(s);
  ASSERT_TRUE(panel.show_block("q4_1"));
  EXPECT_FALSE(panel.show_block("q9_9"));
  (void)panel.grab();
  const QuantBlockSnapshot& b = s.blocks.front();
  ASSERT_EQ(panel.block_view().block(), &panel.snapshot().blocks.front());
  const QStringList texts = panel.block_view().painted_texts();
  EXPECT_TRUE(texts.contains(QuantBlockView::fp16_text("d", b.d, b.d_bits)));
  EXPECT_TRUE(texts.contains(QuantBlockView::fp16_text("m", b.m, b.m_bits)));
  EXPECT_TRUE(
      texts.contains(QStringLiteral("d = %1 (fp16 0x1a0f)").arg(QString::number(b.d, 'g', 5))));
  EXPECT_TRUE(texts.contains(QStringLiteral("20 bytes for 32 weights: 5.00 bits per weight")));
  EXPECT_TRUE(texts.contains(b.formula));
  for (const int q : b.quants) EXPECT_TRUE(texts.contains(QString::number(q))) << q;
  double squared = 0.0;
  double largest = 0.0;
  for (size_t i = 0; i < b.originals.size(); ++i) {
    const double e = b.reconstructed[i] - b.originals[i];
    squared += e * e;
    largest = std::max(largest, std::abs(e));
  }
  EXPECT_TRUE(texts.contains(QStringLiteral("This block's error: RMSE %1 \u00b7 max |error| %2")
                                 .arg(QuantBlockView::format_value(std::sqrt(squared / 32)),
                                      QuantBlockView::format_value(largest))));
}

TEST(QuantisationPanel, MarksTheFirstDivergentTokenInBothRows) {
  QuantisationPanel panel;
  panel.resize(1200, 700);
  panel.set_snapshot(testing::synthetic_quantisation());
  EXPECT_EQ(panel.first_divergent_token(), 7);  // "▁Lily" against "▁Lucy"
  (void)panel.grab();
  EXPECT_EQ(panel.continuation_view().marked_chip_count(), 2);
  EXPECT_EQ(panel.continuation_view().chip_count(), 36);
}

TEST(QuantisationPanel, HistogramPrintsItsStatisticsAndLabelsDecades) {
  QuantisationPanel panel;
  panel.resize(1200, 700);
  const QuantisationSnapshot s = testing::synthetic_quantisation();
  panel.set_snapshot(s);
  (void)panel.grab();
  const QString stats = panel.histogram_view().statistics_text();
  EXPECT_TRUE(
      stats.contains(QStringLiteral("RMSE %1").arg(chart::format_number(s.tensor_error.rmse))));
  EXPECT_TRUE(stats.contains(QStringLiteral("SQNR %1 dB").arg(s.tensor_error.sqnr_db, 0, 'f', 1)));
  const QStringList edges = panel.histogram_view().painted_edge_labels();
  EXPECT_TRUE(edges.contains(QStringLiteral("0.1")));
  EXPECT_TRUE(edges.contains(QStringLiteral("-0.1")));
  EXPECT_FALSE(edges.contains(QStringLiteral("3e-4")));  // half-decades stay unlabelled
  EXPECT_EQ(format_error_edge(-3e-5), QStringLiteral("-3e-5"));
  EXPECT_EQ(format_error_edge(0.03), QStringLiteral("0.03"));
}

TEST(QuantisationPanel, SqnrBarsCoverEveryLayerOfEitherPart) {
  QuantisationPanel panel;
  panel.set_snapshot(testing::synthetic_quantisation());
  const QStringList layers = panel.sqnr_view().layers();
  EXPECT_EQ(layers, (QStringList{"blk.0", "blk.1", "blk.2", "blk.3", "blk.4", "blk.5", "other"}));
}

TEST(QuantisationPanel, CsvHoldsEveryNumberInLongForm) {
  QuantisationPanel panel;
  const QuantisationSnapshot s = testing::synthetic_quantisation();
  panel.set_snapshot(s);
  const QStringList lines = panel.csv().split('\n', Qt::SkipEmptyParts);
  EXPECT_EQ(lines[0], QStringLiteral("part,item,quantity,value,unit"));
  // 6 variants x 15 quantities, the shown block's d, m and 32 x 3 element numbers, 19 bins,
  // 7 + 6 layers, 2 x 18 tokens with piece and id.
  EXPECT_EQ(lines.size(), 1 + 90 + 98 + 19 + 13 + 72);
  EXPECT_TRUE(lines.contains(QStringLiteral("variant,f32 weights / f32 KV,memory,19770000,bytes")));
  EXPECT_TRUE(lines.contains(QStringLiteral("variant,q8_0 weights / f32 KV,TPOT p99,5.5,ms")));
  EXPECT_TRUE(
      lines.contains(QStringLiteral("block,blk.0.ffn_down.weight q4_1 row 0 from column 0,d,%1,")
                         .arg(QString::number(s.blocks.front().d, 'g', 9))));
  EXPECT_TRUE(lines.contains(QStringLiteral("variant,q8_0 weights / f32 KV,decode,1558,tokens/s")));
  EXPECT_TRUE(lines.contains(QStringLiteral("variant,q4_0 weights / q8_0 KV,verdict,accept,")));
  EXPECT_TRUE(lines.contains(QStringLiteral("variant,f32 weights / f32 KV,verdict,baseline,")));
  EXPECT_TRUE(lines.contains(QStringLiteral("SQNR,blk.0 weights,SQNR,19.6,dB")));
  EXPECT_TRUE(lines.contains(QStringLiteral("SQNR,blk.5 KV cache,SQNR,38.9,dB")));
  EXPECT_TRUE(lines.contains(
      QStringLiteral("error histogram,blk.3.ffn_down.weight q4_0 from -inf to -0.1,count,%1,"
                     "elements")
          .arg(s.tensor_error.counts[0])));
  EXPECT_TRUE(lines.contains(QStringLiteral("continuation,q4_0 weights token 7,piece,▁Lucy,")));
  // The limits the user sets change the exported verdicts too.
  panel.min_speedup_control()->setValue(3.0);
  EXPECT_TRUE(
      panel.csv().contains(QStringLiteral("variant,q8_0 weights / f32 KV,verdict,reject,")));
}

// Snapshots no engine should send: an exact layer (infinite SQNR), a missing KV list, a
// histogram whose counts do not fit its edges, no baseline flag, zero speeds.
TEST(QuantisationPanel, OddSnapshotsPaintWithoutCrashing) {
  QuantisationSnapshot s = testing::synthetic_quantisation();
  s.weight_sqnr[0].sqnr_db = std::numeric_limits<double>::infinity();
  s.weight_sqnr[1].sqnr_db = -4.0;
  s.kv_sqnr.clear();
  s.tensor_error.counts.pop_back();
  for (QuantVariantRow& row : s.variants) {
    row.baseline = false;
    row.decode_tokens_per_s = 0.0;
  }
  QuantisationPanel panel;
  panel.set_snapshot(s);
  for (const QSize size : {QSize(1, 1), QSize(200, 150), QSize(1200, 700)}) {
    panel.resize(size);
    EXPECT_FALSE(panel.grab().isNull());
  }
  // Without a marked baseline the first row is the baseline; speed-ups are 0 without speeds.
  EXPECT_EQ(panel.variant_model().index(0, QuantVariantModel::kVerdict).data().toString(),
            QStringLiteral("baseline"));
  EXPECT_EQ(panel.variant_model().index(3, QuantVariantModel::kSpeedup).data().toString(),
            QStringLiteral("0.00"));
  EXPECT_FALSE(panel.csv().contains(QStringLiteral("error histogram")));
}

TEST(QuantisationPanel, TooSmallAsksForRoomInsteadOfSqueezingItsParts) {
  QuantisationPanel panel;
  panel.set_snapshot(testing::synthetic_quantisation());
  panel.resize(200, 150);
  EXPECT_EQ(panel.grab().size(), QSize(200, 150) * panel.devicePixelRatio());
  EXPECT_TRUE(panel.tabs_control()->isHidden());
  EXPECT_FALSE(panel.max_kl_control()->isVisibleTo(&panel));
  // At its minimum the charts show; the other parts when there is room for them.
  panel.resize(panel.minimumSizeHint());
  (void)panel.grab();
  EXPECT_FALSE(panel.tabs_control()->isHidden());
  panel.resize(1200, 900);
  (void)panel.grab();
  EXPECT_FALSE(panel.tabs_control()->isHidden());
  EXPECT_TRUE(panel.max_kl_control()->isVisibleTo(&panel));
}

// Needs of the lecture case, in lines: charts 11, ten table rows 16.5, comparison 5, controls 5.
constexpr QuantPartNeeds kNeeds{11.0, 16.5, 5.0, 5.0};

TEST(QuantParts, AllPartsWhenTheyFit) {
  EXPECT_TRUE(choose_quant_parts(kNeeds, 37.5, {}).all());
  EXPECT_TRUE(choose_quant_parts(kNeeds, 37.5, {}).hidden().isEmpty());
}

TEST(QuantParts, ShortOfRoomTheChartsComeFirstThenTheTable) {
  // 1280x460 in 24 px type: 16 lines, the charts alone (the table does not fit beside them).
  const QuantParts small = choose_quant_parts(kNeeds, 16.0, {});
  EXPECT_EQ(small, (QuantParts{true, false, false, false}));
  EXPECT_EQ(small.hidden(), (QStringList{"variant table", "token comparison", "controls"}));
  // A little more room: the comparison, which needs less than the table.
  EXPECT_EQ(choose_quant_parts(kNeeds, 18.0, {}), (QuantParts{true, false, true, false}));
  // 1920x820: 29 lines, the charts and the table; no room left for the rest.
  EXPECT_EQ(choose_quant_parts(kNeeds, 29.0, {}), (QuantParts{true, true, false, false}));
}

TEST(QuantParts, TheHighlightedPartStaysOnScreen) {
  EXPECT_TRUE(choose_quant_parts(kNeeds, 16.0, QStringLiteral("variants")).table);
  EXPECT_FALSE(choose_quant_parts(kNeeds, 16.0, QStringLiteral("variants")).charts);
  EXPECT_TRUE(choose_quant_parts(kNeeds, 16.0, QStringLiteral("error")).charts);
}

// A panel in lecture type (24 px) at `size`: a projector's panel area.
void to_lecture_size(QuantisationPanel& panel, QSize size) {
  QFont font = panel.font();
  font.setPointSizeF(18);
  panel.setFont(font);
  panel.resize(size);
}

// The panel applies the choice: at lecture size the charts rather than the "too small"
// message, the table when a lesson highlights it, table rows as tall as their type.
TEST(QuantisationPanel, AtLectureSizeShowsWhatFitsAndSaysWhatNot) {
  QuantisationPanel panel;
  panel.set_snapshot(testing::synthetic_quantisation_every_type());
  to_lecture_size(panel, QSize(1280, 460));
  (void)panel.grab();
  EXPECT_TRUE(panel.shown_parts().charts);
  EXPECT_FALSE(panel.tabs_control()->isHidden());
  EXPECT_FALSE(panel.hidden_parts_control()->isHidden());
  EXPECT_TRUE(panel.hidden_parts_control()->text().contains("variant table"));
  ASSERT_TRUE(panel.set_highlight(QStringLiteral("variants")));
  (void)panel.grab();
  EXPECT_TRUE(panel.shown_parts().table);
  EXPECT_FALSE(panel.element_shape(QStringLiteral("variants")).isEmpty());
  const auto* table = panel.findChild<QTableView*>();
  ASSERT_NE(table, nullptr);
  EXPECT_GE(table->rowHeight(1), QFontMetrics(panel.font()).height());
}

}  // namespace
}  // namespace servescope::widgets

namespace servescope::widgets {
namespace {

// Beyond the lecture layout test's first tab: the table alone when a lesson highlights it, at
// lecture size in 24 px type, its least needed columns left out at 1280 px.
// The block tab needs the room of 1920x1080 in lecture type: the table gives way to it.
TEST(QuantisationPanel, BlockTabFitsAtLectureSizeOf1920) {
  QuantisationPanel panel;
  panel.set_snapshot(testing::synthetic_quantisation_every_type());
  to_lecture_size(panel, QSize(1920, 820));
  ASSERT_TRUE(panel.show_block(QStringLiteral("q4_1")));
  (void)panel.grab();
  EXPECT_TRUE(panel.shown_parts().charts);
  EXPECT_FALSE(panel.shown_parts().table);
  for (const std::string& fault :
       testing::layout_faults(testing::painted_texts(panel), QRectF(panel.rect())))
    ADD_FAILURE() << fault;
}

TEST(QuantisationPanel, HighlightedTableFitsLectureSize) {
  for (const QSize size : {QSize(1280, 460), QSize(1920, 820)}) {
    QuantisationPanel panel;
    panel.set_snapshot(testing::synthetic_quantisation());
    to_lecture_size(panel, size);
    ASSERT_TRUE(panel.set_highlight(QStringLiteral("variants")));
    (void)panel.grab();
    EXPECT_TRUE(panel.shown_parts().table);
    for (const std::string& fault :
         testing::layout_faults(testing::painted_texts(panel), QRectF(panel.rect())))
      ADD_FAILURE() << size.width() << "x" << size.height() << ": " << fault;
  }
}

}  // namespace
}  // namespace servescope::widgets
