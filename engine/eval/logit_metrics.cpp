#include "engine/eval/logit_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "engine/core/error.h"

namespace servescope::eval {
namespace {

template <class T>
size_t argmax_index(std::span<const T> values) {
  return static_cast<size_t>(std::max_element(values.begin(), values.end()) - values.begin());
}

}  // namespace

std::vector<double> log_softmax(std::span<const float> logits) {
  std::vector<double> out(logits.size());
  if (logits.empty()) return out;
  const double max = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (const float v : logits) sum += std::exp(static_cast<double>(v) - max);
  // (v - max) - log(sum) keeps precision that max + log(sum) would round away for large logits.
  const double log_sum = std::log(sum);
  for (size_t i = 0; i < logits.size(); ++i) out[i] = (logits[i] - max) - log_sum;
  return out;
}

double negative_log_likelihood(std::span<const float> logits, int32_t target) {
  if (target < 0 || static_cast<size_t>(target) >= logits.size()) {
    throw InputError("target token " + std::to_string(target) + " is outside the " +
                     std::to_string(logits.size()) + " logits");
  }
  return -log_softmax(logits)[static_cast<size_t>(target)];
}

double perplexity(std::span<const double> nlls) {
  if (nlls.empty()) return 1.0;
  return std::exp(std::accumulate(nlls.begin(), nlls.end(), 0.0) /
                  static_cast<double>(nlls.size()));
}

double kl_divergence_from_log_probs(std::span<const double> base_log_probs,
                                    std::span<const double> variant_log_probs) {
  if (base_log_probs.size() != variant_log_probs.size()) {
    throw InputError("KL divergence of distributions over " +
                     std::to_string(base_log_probs.size()) + " and " +
                     std::to_string(variant_log_probs.size()) + " tokens");
  }
  double kl = 0.0;
  for (size_t i = 0; i < base_log_probs.size(); ++i) {
    const double p = std::exp(base_log_probs[i]);
    // Logits that are not numbers (NaN weights) give no distribution: the KL is not a number
    // either, never the 0 that skipping them would report.
    if (std::isnan(p)) return std::numeric_limits<double>::quiet_NaN();
    if (p > 0.0) kl += p * (base_log_probs[i] - variant_log_probs[i]);
  }
  // Rounding can leave a tiny negative sum for (nearly) equal distributions.
  return std::max(kl, 0.0);
}

double kl_divergence(std::span<const float> base_logits, std::span<const float> variant_logits) {
  return kl_divergence_from_log_probs(log_softmax(base_logits), log_softmax(variant_logits));
}

int32_t argmax(std::span<const float> logits) { return static_cast<int32_t>(argmax_index(logits)); }

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
  const auto below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, values.size() - 1);
  const double fraction = rank - static_cast<double>(below);
  return values[below] + fraction * (values[above] - values[below]);
}

int64_t identical_prefix_length(std::span<const int32_t> a, std::span<const int32_t> b) {
  const auto mismatch = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  return static_cast<int64_t>(mismatch.first - a.begin());
}

void LogitComparison::add(std::span<const double> base_log_probs,
                          std::span<const double> variant_log_probs) {
  kl_.push_back(kl_divergence_from_log_probs(base_log_probs, variant_log_probs));
  // A position whose distributions are not numbers agrees with nothing.
  if (std::isfinite(kl_.back()) &&
      argmax_index(base_log_probs) == argmax_index(variant_log_probs)) {
    ++top1_matches_;
  }
}

ComparisonSummary LogitComparison::summary() const {
  ComparisonSummary s;
  s.positions = static_cast<int64_t>(kl_.size());
  if (kl_.empty()) return s;
  s.mean_kl = std::accumulate(kl_.begin(), kl_.end(), 0.0) / static_cast<double>(kl_.size());
  s.p99_kl = percentile(kl_, 99.0);
  s.max_kl = *std::max_element(kl_.begin(), kl_.end());
  s.top1_agreement = static_cast<double>(top1_matches_) / static_cast<double>(kl_.size());
  return s;
}

}  // namespace servescope::eval
