#include "widgets/quantisation_panel.h"

#include <gtest/gtest.h>

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <cmath>
#include <limits>

#include "tests/widgets/synthetic_model_snapshots.h"
#include "widgets/quant_variant_model.h"
#include "widgets/quantisation_charts.h"

namespace servescope::widgets {
namespace {

QuantVariantRow row(double memory_mb, double decode_tokens_per_s, double mean_kl) {
  QuantVariantRow r;
  r.memory_mb = memory_mb;
  r.decode_tokens_per_s = decode_tokens_per_s;
  r.mean_kl = mean_kl;
  return r;
}

TEST(QuantVerdict, AcceptsOnlyWithinEveryLimit) {
  const QuantVariantRow baseline = row(20.0, 500.0, 0.0);
  const QuantLimits limits{0.05, 1.5};
  // 750 / 500 = 1.5x exactly, KL at the limit, half the memory: accepted (limits inclusive).
  EXPECT_TRUE(judge_variant(row(10.0, 750.0, 0.05), baseline, limits).accepted);
  // One failed limit each; each gives exactly one reason.
  const QuantVerdict too_far = judge_variant(row(10.0, 750.0, 0.0501), baseline, limits);
  EXPECT_FALSE(too_far.accepted);
  ASSERT_EQ(too_far.reasons.size(), 1);
  EXPECT_TRUE(too_far.reasons[0].contains(QStringLiteral("mean KL")));
  const QuantVerdict too_slow = judge_variant(row(10.0, 745.0, 0.01), baseline, limits);
  EXPECT_FALSE(too_slow.accepted);
  ASSERT_EQ(too_slow.reasons.size(), 1);
  EXPECT_TRUE(too_slow.reasons[0].contains(QStringLiteral("1.49x")));
  const QuantVerdict no_saving = judge_variant(row(20.0, 900.0, 0.01), baseline, limits);
  EXPECT_FALSE(no_saving.accepted);
  ASSERT_EQ(no_saving.reasons.size(), 1);
  EXPECT_TRUE(no_saving.reasons[0].contains(QStringLiteral("memory")));
  // All three at once.
  EXPECT_EQ(judge_variant(row(25.0, 400.0, 0.2), baseline, limits).reasons.size(), 3);
}

TEST(QuantVerdict, NoLimitsStillRequireAMemorySaving) {
  const QuantVariantRow baseline = row(20.0, 500.0, 0.0);
  const QuantLimits none;  // KL unlimited, speed-up 0
  EXPECT_TRUE(judge_variant(row(3.0, 100.0, 7.5), baseline, none).accepted);
  EXPECT_FALSE(judge_variant(row(20.0, 1000.0, 0.0), baseline, none).accepted);
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
  model.set_variants(s.variants, s.cost_unit);
  EXPECT_EQ(model.rowCount(), 6);
  EXPECT_EQ(model.columnCount(), 12);
  QStringList headers;
  for (int c = 0; c < model.columnCount(); ++c) {
    headers << model.headerData(c, Qt::Horizontal).toString();
    EXPECT_FALSE(model.headerData(c, Qt::Horizontal, Qt::ToolTipRole).toString().isEmpty()) << c;
  }
  const QStringList expected = {"Weights",          "KV\ncache",       "Memory\n(MB)",
                                "Prefill\n(tok/s)", "Decode\n(tok/s)", "Speed-up\n(x)",
                                "Latency\n(ms)",    "Cost\n(GB·ms)",   "Perplexity",
                                "Mean KL\n(nats)",  "Top-1\n(%)",      "Verdict"};
  EXPECT_EQ(headers, expected);
  EXPECT_EQ(model.index(2, QuantVariantModel::kWeights).data().toString(), "q8_0");
  EXPECT_EQ(model.index(2, QuantVariantModel::kKvCache).data().toString(), "f32");
  // 1558 / 556 decode tokens per second.
  EXPECT_EQ(model.index(2, QuantVariantModel::kSpeedup).data().toString(), "2.80");
  EXPECT_EQ(model.index(2, QuantVariantModel::kTop1).data().toString(), "99.1");
  EXPECT_EQ(model.index(0, QuantVariantModel::kVerdict).data().toString(), "baseline");
}

TEST(QuantVariantModel, VerdictsFollowTheLimits) {
  QuantVariantModel model;
  const QuantisationSnapshot s = testing::synthetic_quantisation();
  model.set_variants(s.variants, s.cost_unit);
  auto verdicts = [&] {
    QStringList v;
    for (int r = 0; r < model.rowCount(); ++r) {
      v << model.index(r, QuantVariantModel::kVerdict).data().toString();
    }
    return v;
  };
  model.set_limits({0.05, 1.2});
  EXPECT_EQ(verdicts(),
            (QStringList{"baseline", "accept", "accept", "accept", "accept", "accept"}));
  // Mean KL of the Q4_0 rows is 0.0472 and 0.0481; speed-ups 1.78, 2.80, 2.66, 2.20, 2.32.
  model.set_limits({0.01, 2.5});
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
  std::vector<std::pair<double, double>> signalled;
  QObject::connect(&panel, &QuantisationPanel::limits_changed,
                   [&](double kl, double speedup) { signalled.emplace_back(kl, speedup); });
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
  // 6 variants x 10 quantities, 19 bins, 7 + 6 layers, 2 x 18 tokens with piece and id.
  EXPECT_EQ(lines.size(), 1 + 60 + 19 + 13 + 72);
  EXPECT_TRUE(lines.contains(QStringLiteral("variant,f32 weights / f32 KV,memory,19.77,MB")));
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
  EXPECT_TRUE(panel.histogram_view().isHidden());
  EXPECT_TRUE(panel.max_kl_control()->isHidden());
  panel.resize(panel.minimumSizeHint());
  (void)panel.grab();
  EXPECT_FALSE(panel.histogram_view().isHidden());
  EXPECT_FALSE(panel.max_kl_control()->isHidden());
}

}  // namespace
}  // namespace servescope::widgets
