#include "engine/serving/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "engine/core/error.h"

namespace servescope::serving {
namespace {

// The `keep` ids with the largest logits, most likely first (ties by id, so the order is the
// same on every machine).
std::vector<int32_t> most_likely_first(std::span<const float> logits, size_t keep) {
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(
      ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(keep), ids.end(),
      [&](int32_t a, int32_t b) { return logits[a] != logits[b] ? logits[a] > logits[b] : a < b; });
  ids.resize(keep);
  return ids;
}

}  // namespace

void validate(const SamplingParams& p) {
  if (p.greedy) return;
  if (!(p.temperature > 0.0f) || !std::isfinite(p.temperature)) {
    throw InputError("temperature must be a number above 0 (got " + std::to_string(p.temperature) +
                     "); use --greedy for temperature 0");
  }
  if (p.top_k < 0) throw InputError("top-k must be 0 (off) or positive");
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) throw InputError("top-p must be in (0, 1]");
}

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {
  validate(params_);
}

double Sampler::uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

SampledToken Sampler::sample_with_probability(std::span<const float> logits) {
  if (params_.greedy) return {argmax(logits), 1.0};

  size_t keep = logits.size();
  if (params_.top_k > 0) keep = std::min(keep, static_cast<size_t>(params_.top_k));
  const std::vector<int32_t> ids = most_likely_first(logits, keep);

  // Softmax at the temperature, in double for a stable cumulative sum.
  std::vector<double> probs(keep);
  const double top = logits[ids[0]];
  double total = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    probs[i] = std::exp((logits[ids[i]] - top) / params_.temperature);
    total += probs[i];
  }
  // Nucleus: the shortest prefix whose probability reaches top_p.
  double cumulative = 0.0;
  size_t nucleus = keep;
  for (size_t i = 0; i < keep; ++i) {
    cumulative += probs[i] / total;
    if (cumulative >= params_.top_p) {
      nucleus = i + 1;
      break;
    }
  }
  const double nucleus_mass = std::accumulate(probs.begin(), probs.begin() + nucleus, 0.0);
  double r = uniform() * nucleus_mass;
  size_t chosen = nucleus - 1;
  for (size_t i = 0; i < nucleus; ++i) {
    r -= probs[i];
    if (r < 0.0) {
      chosen = i;
      break;
    }
  }
  return {ids[chosen], probs[chosen] / nucleus_mass};
}

TokenProbabilities token_probabilities(std::span<const float> logits, int32_t token,
                                       int64_t top_k) {
  const float top = *std::max_element(logits.begin(), logits.end());
  double total = 0.0;
  for (const float l : logits) total += std::exp(static_cast<double>(l) - top);
  const auto prob = [&](int32_t id) {
    return std::exp(static_cast<double>(logits[static_cast<size_t>(id)]) - top) / total;
  };
  TokenProbabilities result;
  result.prob = prob(token);
  const auto k = static_cast<size_t>(std::clamp<int64_t>(top_k, 0, std::ssize(logits)));
  if (k == 0) return result;
  for (const int32_t id : most_likely_first(logits, k)) result.top.push_back({id, prob(id)});
  return result;
}

}  // namespace servescope::serving
