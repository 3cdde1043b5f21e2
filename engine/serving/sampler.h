// Picks the next token from logits: greedy, or temperature / top-k / top-p sampling with a
// seeded generator so that a run can be reproduced exactly (same seed, same tokens) on any
// machine.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "engine/telemetry/records.h"

namespace servescope::serving {

struct SamplingParams {
  bool greedy = true;
  float temperature = 1.0f;  // > 0; divides the logits
  int64_t top_k = 0;         // keep the k most likely tokens; 0 = all
  float top_p = 1.0f;        // keep the smallest set whose probability reaches p; 1 = all
  uint64_t seed = 0;
};

// InputError if temperature <= 0, top_k < 0 or top_p outside (0, 1].
void validate(const SamplingParams& params);

struct SampledToken {
  int32_t id = 0;
  // Its probability under the distribution drawn from: softmax at the temperature over the
  // top-k candidates, cut to the top-p nucleus and renormalised; 1 for greedy decoding.
  double sampling_prob = 1.0;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);
  int32_t sample(std::span<const float> logits) { return sample_with_probability(logits).id; }
  // The same draw as sample() (same token, same generator state afterwards), with the chosen
  // token's probability.
  SampledToken sample_with_probability(std::span<const float> logits);

 private:
  double uniform();  // [0, 1) from the 64-bit Mersenne Twister, identical on every platform

  SamplingParams params_;
  std::mt19937_64 rng_;
};

int32_t argmax(std::span<const float> logits);

// The model's own view of one position: softmax of the logits at temperature 1 (in double),
// the probability of `token`, and the top_k most likely tokens, most likely first (ties by
// id). top_k is capped at the vocabulary.
struct TokenProbabilities {
  double prob = 0.0;
  std::vector<telemetry::TokenAlternative> top;
};
TokenProbabilities token_probabilities(std::span<const float> logits, int32_t token, int64_t top_k);

}  // namespace servescope::serving
