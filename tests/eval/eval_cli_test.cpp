// servescope-cli quantize / perplexity / quant-report, run as the real binary: JSON on
// stdout, progress on stderr, a one-line reason and a non-zero exit code on bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/gguf/gguf_file.h"
#include "tests/support/cli_runner.h"

namespace {

using nlohmann::json;

const std::string kData = SERVESCOPE_TEST_DATA_DIR;
const std::string kModels = kData + "/models/";

using servescope::testing_support::CliRun;

std::string temp_path(const std::string& suffix) {
  return servescope::testing_support::per_test_path("eval_cli_", suffix);
}

CliRun cli(const std::string& args) { return servescope::testing_support::run_cli(args); }

TEST(QuantizeCli, WritesTheSameTensorsAsThePythonQuantiser) {
  const std::string out = temp_path(".gguf");
  const CliRun run = cli("quantize --model " + kModels + "llama-f32.gguf --type q8_0 --out " + out);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json doc = json::parse(run.out);
  EXPECT_EQ(doc["type"], "q8_0");
  EXPECT_EQ(doc["file_type"], 7);
  EXPECT_EQ(doc["tensors"], 21);
  EXPECT_EQ(doc["tensors_of_type"], 16);
  EXPECT_NE(run.err.find("tensor 21/21"), std::string::npos) << run.err;

  const auto ours = servescope::gguf::GgufFile::open(out);
  const auto reference = servescope::gguf::GgufFile::open(kModels + "llama-q8_0.gguf");
  ASSERT_EQ(ours.tensors().size(), reference.tensors().size());
  for (size_t i = 0; i < ours.tensors().size(); ++i) {
    const auto& a = ours.tensors()[i];
    const auto& b = reference.tensors()[i];
    ASSERT_EQ(a.n_bytes, b.n_bytes) << a.name;
    EXPECT_TRUE(std::equal(a.data, a.data + a.n_bytes, b.data)) << a.name;
  }
  EXPECT_FALSE(std::filesystem::exists(out + ".partial"));
  std::filesystem::remove(out);
}

// The mixed recipe on the dim-64 llama: no row is a whole super-block, so every matrix takes
// llama.cpp's 32-block fallback (output Q8_0; Q4_K -> Q5_0; the use_more_bits layer's attn_v
// and ffn_down Q6_K -> Q8_0), and the file still loads and runs.
TEST(QuantizeCli, Q4_K_MRecipeWithFallbacks) {
  const std::string out = temp_path(".gguf");
  const CliRun run =
      cli("quantize --model " + kModels + "llama-f32.gguf --type q4_k_m --out " + out);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json doc = json::parse(run.out);
  EXPECT_EQ(doc["type"], "q4_k_m");
  EXPECT_EQ(doc["file_type"], 15);
  EXPECT_EQ(doc["tensors"], 21);
  // 2 layers x (q, k, gate, up, output, and layer 0's v and down) = 12 Q5_0; output.weight,
  // blk.1.attn_v and blk.1.ffn_down Q8_0; 5 norms F32; token_embd Q5_0 too.
  EXPECT_EQ(doc["tensor_types"], (json{{"F32", 5}, {"Q5_0", 13}, {"Q8_0", 3}}));
  const CliRun logits = cli("logits --model " + out + " --ids 1,2,3");
  EXPECT_EQ(logits.exit_code, 0) << logits.err;
  std::filesystem::remove(out);
}

TEST(QuantizeCli, BadInputIsAOneLineReason) {
  const std::string in = kModels + "llama-f32.gguf";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"quantize --model " + kModels + "llama-q8_0.gguf --type q4_0 --out " + temp_path(".gguf"),
       "already quantised"},
      {"quantize --model " + in + " --type iq4_xs --out " + temp_path(".gguf"), "q4_k_m, q5_k_m"},
      {"quantize --model " + in + " --type q8_0 --out /nonexistent-dir/x.gguf", "does not exist"},
      {"quantize --model " + in + " --type q8_0 --out " + in, "is the input file"},
      {"quantize --model " + in + " --type q8_0", "needs --type"},
      {"quantize --model " + in + " --type q8_0 --out " + testing::TempDir(), "is a folder"},
      {"quant-report --model " + in + " --kv-types f16,q4_0", "f32, f16, q8_0"},
      {"quant-report --model " + in + " --max-tpot-ms 0", "--max-tpot-ms needs a limit"},
      {"quant-report --model " + in + " --price-per-hour x", "--price-per-hour"},
      {"generate --model " + in + " --ids 1,2 --kv-type bf16", "unknown KV cache type"},
      {"perplexity --model " + in + " --text-file /nonexistent.txt", "/nonexistent.txt"},
  };
  servescope::testing_support::expect_one_line_refusals(cases);
}

TEST(PerplexityCli, ScoresTheBundledStories) {
  const CliRun run = cli("perplexity --model " + kModels + "gpt2-f32.gguf --max-chunks 2");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json doc = json::parse(run.out);
  EXPECT_EQ(doc["positions"], 2 * 127);  // BOS + 127 text tokens per 128-token chunk
  EXPECT_GT(doc["perplexity"].get<double>(), 1.0);
  EXPECT_NE(run.err.find("254/254 positions"), std::string::npos) << run.err;
}

TEST(QuantReportCli, Q8_0BeatsQ4_0AndTheVerdictAppliesTheLimits) {
  const CliRun run = cli("quant-report --model " + kModels +
                         "llama-f32.gguf --types f32,q8_0,q4_0 --max-chunks 2 --max-kl 0.05");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json doc = json::parse(run.out);
  EXPECT_EQ(doc["positions"], 254);
  EXPECT_EQ(doc["baseline"]["quality"]["mean_kl"], 0.0);
  const json& v = doc["variants"];
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0]["type"], "f32");
  EXPECT_EQ(v[0]["quality"]["mean_kl"], 0.0);
  EXPECT_EQ(v[0]["quality"]["top1_agreement"], 1.0);
  EXPECT_EQ(v[0]["verdict"]["accepted"], false);  // no memory gained
  EXPECT_LT(v[1]["quality"]["mean_kl"].get<double>(), v[2]["quality"]["mean_kl"].get<double>());
  EXPECT_EQ(v[1]["weight_bytes"], 175360);  // 16 matrices in Q8_0 + 5 F32 norms
  EXPECT_EQ(v[2]["weight_bytes"], 93440);
  EXPECT_EQ(v[1]["kv_bytes_per_token"], 2 * 2 * 2 * 16 * 4);  // 2 x layers x kv_heads x hd x 4
  EXPECT_EQ(v[2]["verdict"]["accepted"], false);
  EXPECT_NE(v[2]["verdict"]["reasons"][0].get<std::string>().find("exceeds --max-kl"),
            std::string::npos);
  EXPECT_EQ(v[1]["weight_error_by_layer"].size(), 3u);  // blk.0, blk.1, other
}

// Limits far outside anything a machine measures, so the outcome does not depend on its speed:
// a TPOT of at most a nanosecond fails, a TPOT of at most 1000 s (the option's upper bound)
// passes.
TEST(QuantReportCli, EachVariantHasLatencyCostAndAVerdictPerLimit) {
  for (const auto& [limit, passes] : {std::pair{"0.000001", false}, std::pair{"1000000", true}}) {
    const CliRun run = cli("quant-report --model " + kModels +
                           "llama-f32.gguf --types q8_0 --max-chunks 1 --price-per-hour 3.6"
                           " --max-tpot-ms " +
                           limit);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const json doc = json::parse(run.out);
    EXPECT_EQ(doc["load"],
              "16 clients all at t = 0, prompts 32 tokens, 32 output tokens, max batch 8, "
              "continuous batching");
    for (const json& v : {doc["baseline"], doc["variants"][0]}) {
      EXPECT_LE(v["latency"]["ttft_ms"]["p50"].get<double>(),
                v["latency"]["ttft_ms"]["p99"].get<double>());
      EXPECT_GT(v["latency"]["tpot_ms"]["p99"].get<double>(), 0.0);
      const json& cost = v["cost"];
      EXPECT_DOUBLE_EQ(cost["price_per_request"].get<double>(),
                       cost["device_seconds_per_request"].get<double>() * 3.6 / 3600);
    }
    const json& checks = doc["variants"][0]["verdict"]["checks"];
    ASSERT_EQ(checks.size(), 2u);  // --max-tpot-ms and the memory rule
    EXPECT_EQ(checks[0]["limit"], "max_tpot_ms");
    EXPECT_EQ(checks[0]["passed"], passes);
    EXPECT_EQ(checks[1]["limit"], "memory");
    EXPECT_EQ(checks[1]["passed"], true);
    EXPECT_EQ(doc["variants"][0]["verdict"]["accepted"], passes);
  }
}

TEST(QuantReportCli, KvCacheTypesAreASecondDimension) {
  const CliRun run = cli("quant-report --model " + kModels +
                         "llama-f32.gguf --types f32,q8_0 --kv-types f32,f16,q8_0 --max-chunks 1");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json doc = json::parse(run.out);
  const json& v = doc["variants"];
  ASSERT_EQ(v.size(), 6u);  // every (weight type, KV type) pair
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"f32", "f32"},  {"f32", "f16"},  {"f32", "q8_0"},
      {"q8_0", "f32"}, {"q8_0", "f16"}, {"q8_0", "q8_0"}};
  // Per token: 2 (K and V) x 2 layers x one 32-element row: 128 bytes F32, 64 F16, 34 Q8_0.
  const std::vector<int> row_bytes = {128, 64, 34};
  for (size_t i = 0; i < pairs.size(); ++i) {
    EXPECT_EQ(v[i]["type"], pairs[i].first);
    EXPECT_EQ(v[i]["kv_type"], pairs[i].second);
    EXPECT_EQ(v[i]["kv_bytes_per_token"], 2 * 2 * row_bytes[i % 3]) << i;
    EXPECT_EQ(v[i]["memory_bytes"],
              v[i]["weight_bytes"].get<int64_t>() + 128 * v[i]["kv_bytes_per_token"].get<int64_t>())
        << i;  // weights + a full 128-token context
  }
  EXPECT_EQ(v[0]["quality"]["mean_kl"], 0.0);
  // A smaller cache costs a little precision: F16 less than Q8_0.
  const double kl_f16 = v[1]["quality"]["mean_kl"].get<double>();
  const double kl_q8 = v[2]["quality"]["mean_kl"].get<double>();
  EXPECT_GT(kl_f16, 0.0);
  EXPECT_LT(kl_f16, kl_q8);
  EXPECT_LT(kl_q8, 1e-2);
  EXPECT_LT(v[1]["memory_ratio"].get<double>(), 1.0);
  EXPECT_EQ(v[1]["weight_bytes_ratio"], 1.0);
}

TEST(WeightErrorCli, PerTensorAndPerLayer) {
  const CliRun run = cli("weight-error --model " + kModels + "gpt2-f32.gguf --type q4_0");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json doc = json::parse(run.out);
  EXPECT_EQ(doc["bin_edges"].size(), 18u);
  EXPECT_EQ(doc["layers"].size(), 3u);  // blk.0, blk.1, other
  const json& tensors = doc["tensors"];
  ASSERT_FALSE(tensors.empty());
  for (const json& t : tensors) {
    EXPECT_EQ(t["histogram"].size(), 19u);
    if (t["type"] == "F32") {
      EXPECT_TRUE(t["sqnr_db"].is_null()) << t["name"];  // exact: +inf
    } else {
      EXPECT_GT(t["sqnr_db"].get<double>(), 10.0) << t["name"];
    }
  }
}

}  // namespace
