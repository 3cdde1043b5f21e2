// servescope-cli's command-line contract, tested by running the real binary: JSON on stdout,
// a one-line reason and a non-zero exit code on bad input.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/cli_runner.h"

namespace {

using nlohmann::json;

using servescope::testing_support::CliRun;

const std::string kData = SERVESCOPE_TEST_DATA_DIR;

CliRun cli(const std::string& args) { return servescope::testing_support::run_cli(args); }

std::string model(const std::string& name) { return " --model " + kData + "/models/" + name; }

json golden(const std::string& name) {
  std::ifstream in(kData + "/models/" + name + ".json");
  return json::parse(in);
}

std::string id_list(const std::vector<int32_t>& ids) {
  std::string text;
  for (const int32_t id : ids) text += (text.empty() ? "" : ",") + std::to_string(id);
  return text;
}

TEST(Cli, GenerateReproducesThePyTorchGreedyContinuation) {
  for (const std::string name : {"llama-f32", "gpt2-q8_0"}) {
    const json g = golden(name);
    const auto greedy = g["greedy_ids"].get<std::vector<int32_t>>();
    const CliRun run = cli("generate" + model(name + ".gguf") + " --ids " +
                        id_list(g["prompt_ids"].get<std::vector<int32_t>>()) +
                        " --greedy --json --no-stop --max-tokens " + std::to_string(greedy.size()));
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const json doc = json::parse(run.out);
    EXPECT_EQ(doc["generated_ids"].get<std::vector<int32_t>>(), greedy) << name;
    EXPECT_EQ(doc["prompt_ids"], g["prompt_ids"]);
    for (const char* key : {"text", "prefill_ms", "decode_ms", "prefill_tokens_per_s",
                            "decode_tokens_per_s"}) {
      EXPECT_TRUE(doc.contains(key)) << key;
    }
    EXPECT_GT(doc["decode_tokens_per_s"].get<double>(), 0.0);
  }
}

TEST(Cli, LogitsAllMatchesGolden) {
  const json g = golden("gpt2-f32");
  const CliRun run = cli("logits" + model("gpt2-f32.gguf") + " --all --ids " +
                      id_list(g["prompt_ids"].get<std::vector<int32_t>>()));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto logits = json::parse(run.out)["logits"].get<std::vector<std::vector<float>>>();
  const auto expected = g["logits"].get<std::vector<std::vector<float>>>();
  ASSERT_EQ(logits.size(), expected.size());
  for (size_t p = 0; p < logits.size(); ++p) {
    for (size_t i = 0; i < logits[p].size(); ++i) ASSERT_NEAR(logits[p][i], expected[p][i], 1e-3);
  }
  const CliRun last = cli("logits" + model("gpt2-f32.gguf") + " --ids 1,2,3");
  EXPECT_EQ(json::parse(last.out)["logits"].size(), 1u);
}

TEST(Cli, InfoReportsSizesAndKvBytes) {
  const CliRun run = cli("info" + model("llama-q8_0.gguf"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json doc = json::parse(run.out);
  EXPECT_EQ(doc["architecture"], "llama");
  EXPECT_EQ(doc["kv_heads"], 2);
  // 2 x layers x kv_heads x head_dim x 4 bytes
  EXPECT_EQ(doc["kv_bytes_per_token"]["f32"], 2 * 2 * 2 * 16 * 4);
  EXPECT_TRUE(doc["tensor_types"].contains("Q8_0"));
  EXPECT_GT(doc["parameters"].get<int64_t>(), 0);
}

TEST(Cli, TokenizeGivesIdsAndPieces) {
  const CliRun run = cli("tokenize" + model("llama-f32.gguf") + " --text 'Hello world' --no-bos");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json doc = json::parse(run.out);
  EXPECT_EQ(doc["ids"].size(), doc["pieces"].size());
  EXPECT_GT(doc["ids"].size(), 0u);
}

// Bad input: non-zero exit, nothing on stdout, one line on stderr that says what is wrong.
TEST(Cli, BadInputIsAOneLineReason) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"generate" + model("llama-f32.gguf") + " --ids 1,x,3", "'x' is not a token id"},
      {"generate" + model("llama-f32.gguf") + " --ids 1,99999", "outside the vocabulary"},
      {"generate" + model("llama-f32.gguf") + " --ids 1 --greedy --seed 3", "--greedy cannot"},
      {"generate" + model("llama-f32.gguf") + " --ids 1 --temperature -1", "temperature"},
      {"logits --model /nonexistent.gguf --ids 1", "/nonexistent.gguf"},
      {"logits" + model("llama-f32.gguf") + " --ids 1 --backend tpu", "cpu, vulkan"},
      {"info" + model("llama-f32.gguf") + " --frobnicate", "unknown option --frobnicate"},
      {"explode", "unknown subcommand"},
  };
  for (const auto& [args, reason] : cases) {
    const CliRun run = cli(args);
    EXPECT_NE(run.exit_code, 0) << args;
    EXPECT_TRUE(run.out.empty()) << args;
    EXPECT_NE(run.err.find(reason), std::string::npos) << args << " -> " << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  }
}

}  // namespace
