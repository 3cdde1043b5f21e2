// Picks the next token from logits: greedy, or temperature / top-k / top-p sampling with a
// seeded generator so that a run can be reproduced exactly (same seed, same tokens) on any
// machine.
#pragma once

#include <cstdint>
#include <random>
#include <span>

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

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);
  int32_t sample(std::span<const float> logits);

 private:
  double uniform();  // [0, 1) from the 64-bit Mersenne Twister, identical on every platform

  SamplingParams params_;
  std::mt19937_64 rng_;
};

int32_t argmax(std::span<const float> logits);

}  // namespace servescope::serving
