// The command-line contract of the inspection subcommands (attention, devices, probe,
// kv-error), by running the real binary against independent references.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/cli_runner.h"

namespace {

using nlohmann::json;
using servescope::testing_support::CliRun;
using servescope::testing_support::expect_one_line_refusals;
using servescope::testing_support::run_cli;

const std::string kModels = std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/";

std::string model(const std::string& name) { return " --model " + kModels + name + ".gguf"; }

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

std::string id_list(const json& ids) {
  std::string text;
  for (const auto& id : ids) text += (text.empty() ? "" : ",") + std::to_string(id.get<int>());
  return text;
}

// One head of one layer, as PyTorch computed it (tools/golden/make_attention_golden.py).
TEST(AttentionCli, PrintsTheWeightsPyTorchComputes) {
  for (const std::string name : {"llama-f32", "gpt2-f32"}) {
    const json golden = read_json(kModels + name + ".attention.json");
    for (const auto& [kv, layer, head] : {std::tuple{"f32", 1, 3}, std::tuple{"q8_0", 0, 2}}) {
      const CliRun run = run_cli(
          "attention" + model(name) + " --ids " + id_list(golden["prompt_ids"]) + " --layer " +
          std::to_string(layer) + " --head " + std::to_string(head) + " --kv-type " + kv);
      ASSERT_EQ(run.exit_code, 0) << run.err;
      const json doc = json::parse(run.out);
      EXPECT_EQ(doc["layer"], layer);
      EXPECT_EQ(doc["head"], head);
      EXPECT_EQ(doc["ids"], golden["prompt_ids"]);
      EXPECT_EQ(doc["pieces"].size(), golden["prompt_ids"].size());
      const json& expected = golden["kv_types"][kv][layer][head];
      ASSERT_EQ(doc["weights"].size(), expected.size());
      for (size_t i = 0; i < expected.size(); ++i) {
        ASSERT_EQ(doc["weights"][i].size(), i + 1);
        for (size_t t = 0; t <= i; ++t) {
          EXPECT_NEAR(doc["weights"][i][t].get<double>(), expected[i][t].get<double>(), 5e-4)
              << name << " " << kv << " row " << i;
        }
      }
    }
  }
}

TEST(AttentionCli, BadInputIsAOneLineReason) {
  const std::string llama = model("llama-f32");
  expect_one_line_refusals({
      {"attention" + llama + " --ids 1,2 --head 0", "needs --layer"},
      {"attention" + llama + " --ids 1,2 --layer 0", "needs --head"},
      {"attention" + llama + " --ids 1,2 --layer 2 --head 0", "--layer 2 is outside the model"},
      {"attention" + llama + " --ids 1,2 --layer 0 --head -1", "--head -1 is outside the model"},
      {"attention" + llama + " --ids 1,2 --prompt 'a' --layer 0 --head 0", "exactly one of"},
      {"attention" + llama + " --ids 1,2 --layer 0 --head 0 --kv-type q4_0", "q4_0"},
      {"attention" + llama + " --ids 1,2 --layer 0 --head 0 --device 1", "one device"},
  });
}

}  // namespace
