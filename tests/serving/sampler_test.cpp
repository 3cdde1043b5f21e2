#include "engine/serving/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

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

TEST(Sampler, RejectsBadParameters) {
  EXPECT_THROW(Sampler(sampling(0.0f, 0, 1.0f, 0)), InputError);
  EXPECT_THROW(Sampler(sampling(1.0f, -1, 1.0f, 0)), InputError);
  EXPECT_THROW(Sampler(sampling(1.0f, 0, 0.0f, 0)), InputError);
  EXPECT_THROW(Sampler(sampling(1.0f, 0, 1.5f, 0)), InputError);
}

}  // namespace
}  // namespace servescope::serving
