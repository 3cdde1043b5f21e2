// servescope-cli's CPU options: --threads N and --activations f32|q8_0 on the subcommands that
// run the model, with the same logits for any thread count and a one-line reason for bad values.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "tests/support/cli_runner.h"

namespace {

using nlohmann::json;

const std::string kModels = std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/";

std::vector<float> logits(const std::string& options) {
  const auto run = servescope::testing_support::run_cli(
      "logits --model " + kModels + "llama-q4_0.gguf --all --ids 1,5,9,2,33,4,17 " + options);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const json doc = json::parse(run.out);
  std::vector<float> flat;
  for (const auto& row : doc["logits"]) {
    for (const auto& v : row) flat.push_back(v.get<float>());
  }
  return flat;
}

TEST(CliThreads, LogitsAreTheSameOnOneTwoThreeThreads) {
  for (const std::string activations : {"f32", "q8_0"}) {
    const std::vector<float> one = logits("--threads 1 --activations " + activations);
    EXPECT_EQ(logits("--threads 2 --activations " + activations), one) << activations;
    EXPECT_EQ(logits("--threads 3 --activations " + activations), one) << activations;
  }
}

// 8-bit activations are a different computation of the same model: on this tiny random-weight
// model (dim 64) they move the logits by about 3.5% of their RMS.
TEST(CliThreads, EightBitActivationsChangeQuantisedLogitsOnlyALittle) {
  const std::vector<float> exact = logits("");
  const std::vector<float> quantised = logits("--activations q8_0");
  ASSERT_EQ(exact.size(), quantised.size());
  ASSERT_FALSE(exact.empty());
  double difference = 0.0;
  double magnitude = 0.0;
  for (size_t i = 0; i < exact.size(); ++i) {
    difference += double(exact[i] - quantised[i]) * (exact[i] - quantised[i]);
    magnitude += double(exact[i]) * exact[i];
  }
  EXPECT_GT(difference, 0.0);
  EXPECT_LT(std::sqrt(difference / magnitude), 0.1);
}

TEST(CliThreads, BadValuesAreAOneLineReason) {
  const std::string m = " --model " + kModels + "llama-f32.gguf";
  servescope::testing_support::expect_one_line_refusals({
      {"logits" + m + " --ids 1 --threads 0", "--threads 0 is below the limit of 1"},
      {"generate" + m + " --ids 1 --threads x", "--threads"},
      {"logits" + m + " --ids 1 --activations int4", "--activations is f32"},
  });
}

}  // namespace
