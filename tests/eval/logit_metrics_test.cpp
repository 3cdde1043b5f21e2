#include "engine/eval/logit_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "engine/core/error.h"

namespace servescope::eval {
namespace {

TEST(LogitMetrics, LogSoftmaxHandComputed) {
  const std::vector<float> logits = {1, 2, 3};
  const double log_sum = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  const std::vector<double> out = log_softmax(logits);
  ASSERT_EQ(out.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(out[i], logits[i] - log_sum, 1e-15);
}

TEST(LogitMetrics, LogSoftmaxIsStableForHugeLogits) {
  const std::vector<float> logits = {1000, 1000};
  const std::vector<double> out = log_softmax(logits);
  EXPECT_NEAR(out[0], std::log(0.5), 1e-15);
  EXPECT_NEAR(out[1], std::log(0.5), 1e-15);
}

TEST(LogitMetrics, NllAndPerplexityOfUniformLogitsIsTheVocabulary) {
  const std::vector<float> logits(50, 0.3f);
  const double nll = negative_log_likelihood(logits, 7);
  EXPECT_NEAR(nll, std::log(50.0), 1e-12);
  const std::vector<double> nlls = {nll, nll, nll};
  EXPECT_NEAR(perplexity(nlls), 50.0, 1e-9);
  EXPECT_EQ(perplexity({}), 1.0);
  EXPECT_THROW(negative_log_likelihood(logits, 50), InputError);
  EXPECT_THROW(negative_log_likelihood(logits, -1), InputError);
}

TEST(LogitMetrics, KlHandComputed) {
  // P = (1/2, 1/2), Q = (3/4, 1/4): KL = 1/2 ln(2/3) + 1/2 ln 2 = 1/2 ln(4/3).
  const std::vector<float> base = {0, 0};
  const std::vector<float> variant = {static_cast<float>(std::log(3.0)), 0};
  EXPECT_NEAR(kl_divergence(base, variant), 0.5 * std::log(4.0 / 3.0), 1e-7);
}

TEST(LogitMetrics, KlOfADistributionWithItselfIsZero) {
  const std::vector<float> logits = {0.1f, -3, 2.5f, 7, -0.25f};
  EXPECT_EQ(kl_divergence(logits, logits), 0.0);
  std::vector<float> shifted = logits;  // softmax ignores a common shift
  for (float& v : shifted) v += 4;
  EXPECT_NEAR(kl_divergence(logits, shifted), 0.0, 1e-12);
  EXPECT_THROW(kl_divergence(logits, std::vector<float>{1, 2}), InputError);
}

// NaN weights give NaN logits: neither a KL of 0 nor an agreeing top-1 may come of them.
TEST(LogitMetrics, LogitsThatAreNotNumbersGiveAKlThatIsNotANumberAndNoAgreement) {
  const std::vector<float> nan_logits(4, std::numeric_limits<float>::quiet_NaN());
  const std::vector<float> logits = {0.1f, -3, 2.5f, 7};
  EXPECT_TRUE(std::isnan(kl_divergence(nan_logits, nan_logits)));
  EXPECT_TRUE(std::isnan(kl_divergence(nan_logits, logits)));
  EXPECT_TRUE(std::isnan(kl_divergence(logits, nan_logits)));
  LogitComparison comparison;
  comparison.add(log_softmax(nan_logits), log_softmax(nan_logits));
  comparison.add(log_softmax(logits), log_softmax(logits));
  EXPECT_TRUE(std::isnan(comparison.summary().mean_kl));
  EXPECT_EQ(comparison.summary().top1_agreement, 0.5);  // the finite position alone agrees
}

TEST(LogitMetrics, ArgmaxTakesTheFirstOfTies) {
  EXPECT_EQ(argmax(std::vector<float>{1, 5, 5, 2}), 1);
  EXPECT_EQ(argmax(std::vector<float>{-1}), 0);
}

TEST(LogitMetrics, PercentileInterpolatesLikeNumpy) {
  // numpy.percentile([1, 2, 3, 4], 99) = 3.97; [..., 50] = 2.5
  EXPECT_NEAR(percentile({4, 1, 3, 2}, 99), 3.97, 1e-12);
  EXPECT_NEAR(percentile({4, 1, 3, 2}, 50), 2.5, 1e-12);
  EXPECT_EQ(percentile({4, 1, 3, 2}, 100), 4.0);
  EXPECT_EQ(percentile({4, 1, 3, 2}, 0), 1.0);
  EXPECT_EQ(percentile({7}, 99), 7.0);
  EXPECT_EQ(percentile({}, 99), 0.0);
}

TEST(LogitMetrics, IdenticalPrefixLength) {
  EXPECT_EQ(
      identical_prefix_length(std::vector<int32_t>{1, 2, 3, 4}, std::vector<int32_t>{1, 2, 9, 4}),
      2);
  EXPECT_EQ(identical_prefix_length(std::vector<int32_t>{1, 2}, std::vector<int32_t>{1, 2, 3}), 2);
  EXPECT_EQ(identical_prefix_length(std::vector<int32_t>{5}, std::vector<int32_t>{6}), 0);
  EXPECT_EQ(identical_prefix_length({}, {}), 0);
}

TEST(LogitMetrics, ComparisonSummary) {
  LogitComparison comparison;
  const std::vector<float> a = {0, 0}, b = {static_cast<float>(std::log(3.0)), 0}, c = {0, 2};
  comparison.add(log_softmax(a), log_softmax(a));  // KL 0, argmax 0 == 0
  comparison.add(log_softmax(c), log_softmax(b));  // argmax 1 vs 0
  const ComparisonSummary s = comparison.summary();
  EXPECT_EQ(s.positions, 2);
  EXPECT_DOUBLE_EQ(s.top1_agreement, 0.5);
  const double kl = kl_divergence(c, b);
  EXPECT_NEAR(s.mean_kl, kl / 2, 1e-15);
  EXPECT_NEAR(s.max_kl, kl, 1e-15);
  EXPECT_NEAR(s.p99_kl, 0.99 * kl, 1e-15);
  EXPECT_EQ(LogitComparison().summary().top1_agreement, 1.0);
}

}  // namespace
}  // namespace servescope::eval
