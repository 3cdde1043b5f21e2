#include "engine/serving/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>

#include "engine/core/error.h"

namespace servescope::serving {
namespace {

const std::vector<float> kLogits = {1.0f, 3.0f, 2.0f, 0.5f, 2.5f};

SamplingParams sampling(float temperature, int64_t top_k, float top_p, uint64_t seed) {
  return SamplingParams{false, temperature, top_k, top_p, seed};
}

std::vector<int32_t> draw(const SamplingParams& p, int n) {
  Sampler sampler(p);
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) out.push_back(sampler.sample(kLogits));
  return out;
}

TEST(Sampler, GreedyTakesTheLargestLogit) {
  Sampler sampler(SamplingParams{});
  EXPECT_EQ(sampler.sample(kLogits), 1);
}

TEST(Sampler, SameSeedSameTokensOtherSeedOtherTokens) {
  EXPECT_EQ(draw(sampling(1.0f, 0, 1.0f, 42), 200), draw(sampling(1.0f, 0, 1.0f, 42), 200));
  EXPECT_NE(draw(sampling(1.0f, 0, 1.0f, 42), 200), draw(sampling(1.0f, 0, 1.0f, 43), 200));
}

TEST(Sampler, TopKOneAndTinyTopPAreGreedy) {
  for (const int32_t id : draw(sampling(1.0f, 1, 1.0f, 7), 100)) EXPECT_EQ(id, 1);
  for (const int32_t id : draw(sampling(1.0f, 0, 0.01f, 7), 100)) EXPECT_EQ(id, 1);
}

TEST(Sampler, TopKKeepsOnlyTheKMostLikely) {
  for (const int32_t id : draw(sampling(5.0f, 2, 1.0f, 3), 500)) EXPECT_TRUE(id == 1 || id == 4);
}

TEST(Sampler, TopPKeepsTheSmallestNucleus) {
  // Softmax of kLogits: p(1)=0.43, p(4)=0.26, p(2)=0.16, ... top-p 0.6 keeps tokens 1 and 4.
  for (const int32_t id : draw(sampling(1.0f, 0, 0.6f, 3), 500)) EXPECT_TRUE(id == 1 || id == 4);
}

// Frequencies follow softmax(logits / T) (fixed seed, so this cannot flake).
TEST(Sampler, FrequenciesFollowTheTemperedSoftmax) {
  const float temperature = 1.5f;
  const int n = 40000;
  std::map<int32_t, int> counts;
  for (const int32_t id : draw(sampling(temperature, 0, 1.0f, 11), n)) ++counts[id];
  double total = 0.0;
  for (const float l : kLogits) total += std::exp(l / temperature);
  for (size_t id = 0; id < kLogits.size(); ++id) {
    const double expected = std::exp(kLogits[id] / temperature) / total;
    EXPECT_NEAR(counts[static_cast<int32_t>(id)] / double(n), expected, 0.01) << "token " << id;
  }
}

// The sampler's definition, written the slow and obvious way: every candidate ranked by a
// comparison (logit descending, ties by id), softmax in double at the temperature over the top
// k in that order, the shortest prefix reaching top_p, one uniform draw over that prefix.
SampledToken reference_draw(const std::vector<float>& logits, const SamplingParams& p,
                            std::mt19937_64& rng) {
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  });
  const size_t keep = p.top_k > 0 ? std::min(ids.size(), static_cast<size_t>(p.top_k)) : ids.size();
  std::vector<double> probs(keep);
  double total = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    probs[i] = std::exp((logits[ids[i]] - double(logits[ids[0]])) / p.temperature);
    total += probs[i];
  }
  size_t nucleus = keep;
  double cumulative = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    cumulative += probs[i] / total;
    if (cumulative >= p.top_p) {
      nucleus = i + 1;
      break;
    }
  }
  const double mass = std::accumulate(probs.begin(), probs.begin() + nucleus, 0.0);
  double r = static_cast<double>(rng() >> 11) * 0x1.0p-53 * mass;
  size_t chosen = nucleus - 1;
  for (size_t i = 0; i < nucleus; ++i) {
    r -= probs[i];
    if (r < 0.0) {
      chosen = i;
      break;
    }
  }
  return {ids[chosen], probs[chosen] / mass};
}

// The sampler ranks packed integer keys instead (a full ranking by comparison cost more than a
// decode step); it must draw exactly what the definition draws, token and probability bit for
// bit, over a vocabulary-sized distribution with ties, -0 beside +0, and every kind of cut.
TEST(Sampler, DrawsExactlyWhatTheDefinitionDraws) {
  std::mt19937 logits_rng(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (const SamplingParams& params :
       {sampling(0.8f, 0, 0.95f, 1), sampling(1.0f, 40, 1.0f, 2), sampling(1.3f, 0, 1.0f, 3),
        sampling(0.5f, 5, 0.5f, 4), sampling(0.8f, 2048, 0.9f, 5), sampling(2.0f, 5000, 0.99f, 6),
        sampling(0.7f, 1, 1.0f, 7)}) {
    Sampler sampler(params);
    std::mt19937_64 reference_rng(params.seed);
    for (int step = 0; step < 60; ++step) {
      std::vector<float> logits(2048);
      for (float& l : logits) l = normal(logits_rng);
      // Ties: a run of copies of the step's largest logit and of a middling one.
      const float top = *std::max_element(logits.begin(), logits.end());
      for (int i = 0; i < 4; ++i) logits[static_cast<size_t>(100 * i + step)] = top;
      for (int i = 0; i < 30; ++i) logits[static_cast<size_t>(1000 + 7 * i)] = 0.25f;
      logits[3] = -0.0f;
      logits[2] = 0.0f;
      const SampledToken expected = reference_draw(logits, params, reference_rng);
      const SampledToken got = sampler.sample_with_probability(logits);
      ASSERT_EQ(got.id, expected.id) << "top_k " << params.top_k << " step " << step;
      ASSERT_EQ(got.sampling_prob, expected.sampling_prob)
          << "top_k " << params.top_k << " step " << step;
    }
  }
}

TEST(Sampler, RejectsBadParameters) {
  EXPECT_THROW(Sampler(sampling(0.0f, 0, 1.0f, 0)), InputError);
  EXPECT_THROW(Sampler(sampling(1.0f, -1, 1.0f, 0)), InputError);
  EXPECT_THROW(Sampler(sampling(1.0f, 0, 0.0f, 0)), InputError);
  EXPECT_THROW(Sampler(sampling(1.0f, 0, 1.5f, 0)), InputError);
}

}  // namespace
}  // namespace servescope::serving
