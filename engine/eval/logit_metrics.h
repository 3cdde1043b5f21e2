// Quality measures on next-token logits, the ones llama-perplexity --kl-divergence reports:
// negative log-likelihood and perplexity, KL divergence of a variant's next-token
// distribution from the baseline's, top-1 agreement. Plain functions on rows of logits; no
// model inside. All arithmetic in double.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace servescope::eval {

// log softmax(logits), computed stably (max subtracted first).
std::vector<double> log_softmax(std::span<const float> logits);

// -log P(target) under softmax(logits). InputError if target is not an index of logits.
double negative_log_likelihood(std::span<const float> logits, int32_t target);

// exp(mean NLL); 1 for no positions (nothing is surprising about nothing).
double perplexity(std::span<const double> nlls);

// KL(P_base || P_variant) = sum_i p_i (log p_i - log q_i), in nats; >= 0, 0 for equal
// distributions. Rows must have equal length (InputError otherwise).
double kl_divergence(std::span<const float> base_logits, std::span<const float> variant_logits);
// The same from precomputed log_softmax rows (the evaluator keeps the baseline's).
double kl_divergence_from_log_probs(std::span<const double> base_log_probs,
                                    std::span<const double> variant_log_probs);

// Index of the largest logit (the first one on ties, as GGML's argmax).
int32_t argmax(std::span<const float> logits);

// The p-th percentile (p in [0, 100]) with linear interpolation between order statistics,
// as numpy.percentile's default. 0 for no values.
double percentile(std::vector<double> values, double p);

// How many leading tokens two streams share: the length of the identical greedy continuation.
int64_t identical_prefix_length(std::span<const int32_t> a, std::span<const int32_t> b);

// Running comparison of a variant against the baseline, one position at a time.
struct ComparisonSummary {
  int64_t positions = 0;
  double mean_kl = 0.0;
  double p99_kl = 0.0;
  double max_kl = 0.0;
  double top1_agreement = 1.0;  // fraction of positions whose argmax is the same; 1 for none
};

class LogitComparison {
 public:
  void add(std::span<const double> base_log_probs, std::span<const double> variant_log_probs);
  ComparisonSummary summary() const;
  const std::vector<double>& kl_per_position() const { return kl_; }

 private:
  std::vector<double> kl_;
  int64_t top1_matches_ = 0;
};

}  // namespace servescope::eval
