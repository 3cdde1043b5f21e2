// servescope-cli's command-line contract, tested by running the real binary: JSON on stdout,
// a one-line reason and a non-zero exit code on bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <nlohmann/json.hpp>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_config.h"
#include "engine/serving/kv_block_pool.h"
#include "tests/support/cli_runner.h"
#include "tests/support/gguf_copy.h"

namespace {

using nlohmann::json;

using servescope::testing_support::CliRun;
namespace gguf = servescope::gguf;
namespace serving = servescope::serving;

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
    const CliRun run =
        cli("generate" + model(name + ".gguf") + " --ids " +
            id_list(g["prompt_ids"].get<std::vector<int32_t>>()) +
            " --greedy --json --no-stop --max-tokens " + std::to_string(greedy.size()));
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const json doc = json::parse(run.out);
    EXPECT_EQ(doc["generated_ids"].get<std::vector<int32_t>>(), greedy) << name;
    EXPECT_EQ(doc["prompt_ids"], g["prompt_ids"]);
    for (const char* key :
         {"text", "prefill_ms", "decode_ms", "prefill_tokens_per_s", "decode_tokens_per_s"}) {
      EXPECT_TRUE(doc.contains(key)) << key;
    }
    EXPECT_GT(doc["decode_tokens_per_s"].get<double>(), 0.0);
    EXPECT_EQ(doc["finish_reason"], "max_tokens");  // --no-stop: it ran to --max-tokens
  }
}

// --warmup runs the work once untimed first: the measured run is the same continuation, its
// figures count its own prompt and steps once, and nothing of the warm-up reaches the output.
TEST(Cli, GenerateWarmupMeasuresOnlyTheSecondRun) {
  const json g = golden("llama-f32");
  const auto greedy = g["greedy_ids"].get<std::vector<int32_t>>();
  const auto prompt = g["prompt_ids"].get<std::vector<int32_t>>();
  const std::string args = "generate" + model("llama-f32.gguf") + " --ids " + id_list(prompt) +
                           " --greedy --no-stop --max-tokens " + std::to_string(greedy.size());
  const CliRun run = cli(args + " --json --top 2 --warmup");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json doc = json::parse(run.out);
  EXPECT_EQ(doc["generated_ids"].get<std::vector<int32_t>>(), greedy);
  EXPECT_EQ(doc["prefill_tokens"].get<size_t>(), prompt.size());
  EXPECT_EQ(doc["decode_steps"].get<size_t>(), greedy.size() - 1);
  EXPECT_EQ(doc["tokens"].size(), greedy.size());
  EXPECT_TRUE(doc["warmup"].get<bool>());
  EXPECT_FALSE(json::parse(cli(args + " --json").out)["warmup"].get<bool>());
  // As text: the same stream as without the warm-up.
  const CliRun text = cli(args + " --warmup");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out, cli(args).out);
}

// --top: each generated token's probability and its K most likely alternatives, against the
// softmax of the PyTorch logits at the last prompt position (the first generated token).
TEST(Cli, GenerateTopGivesTokenProbabilitiesOfTheReference) {
  for (const std::string name : {"llama-f32", "gpt2-f32"}) {
    const json g = golden(name);
    const auto logits = g["logits"].back().get<std::vector<double>>();
    std::vector<double> ref;
    const double top = *std::max_element(logits.begin(), logits.end());
    double total = 0.0;
    for (const double l : logits) total += ref.emplace_back(std::exp(l - top));
    for (double& p : ref) p /= total;

    const CliRun run = cli("generate" + model(name + ".gguf") + " --ids " +
                           id_list(g["prompt_ids"].get<std::vector<int32_t>>()) +
                           " --greedy --json --no-stop --max-tokens 4 --top 3");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const json doc = json::parse(run.out);
    const json& tokens = doc["tokens"];
    ASSERT_EQ(tokens.size(), doc["generated_ids"].size()) << name;
    for (size_t i = 0; i < tokens.size(); ++i) {
      EXPECT_EQ(tokens[i]["id"], doc["generated_ids"][i]);
      EXPECT_EQ(tokens[i]["sampling_prob"].get<double>(), 1.0);  // greedy
      ASSERT_EQ(tokens[i]["top"].size(), 3u);
      EXPECT_EQ(tokens[i]["top"][0]["id"], tokens[i]["id"]);
      EXPECT_TRUE(tokens[i]["piece"].is_string() || tokens[i]["piece"].is_null());
    }
    const auto first = tokens[0]["id"].get<size_t>();
    EXPECT_NEAR(tokens[0]["prob"].get<double>(), ref[first], 2e-3 * ref[first]) << name;
    for (const json& alternative : tokens[0]["top"]) {
      const auto id = alternative["id"].get<size_t>();
      EXPECT_NEAR(alternative["prob"].get<double>(), ref[id], 2e-3 * ref[id] + 1e-7) << name;
    }
  }
  // Sampled: the probability under the truncated distribution is at least the model's own.
  const CliRun sampled = cli("generate" + model("llama-f32.gguf") +
                             " --ids 1,2,3 --json --no-stop --max-tokens 5 --temperature 0.9 "
                             "--top-k 20 --top-p 0.8 --seed 4 --top 0");
  ASSERT_EQ(sampled.exit_code, 0) << sampled.err;
  const json sampled_doc = json::parse(sampled.out);  // the loop ranges over a part of it
  for (const json& token : sampled_doc["tokens"]) {
    EXPECT_GT(token["sampling_prob"].get<double>(), 0.0);
    EXPECT_LE(token["sampling_prob"].get<double>(), 1.0);
    EXPECT_TRUE(token["top"].empty());
  }
  // Without --top there is no "tokens" field.
  const CliRun plain = cli("generate" + model("llama-f32.gguf") + " --ids 1,2 --greedy --json");
  EXPECT_FALSE(json::parse(plain.out).contains("tokens"));
}

// --n: samples of one prompt, computed once and sharing its KV blocks. Each sample's tokens are
// those of a run of its own with its seed (seed + i); the bytes saved are the formula's: the
// prompt's 2 blocks (21 tokens, blocks of 16) held once instead of 3 times, and two samples
// copy the partly filled one when they write into it.
TEST(Cli, GenerateNSamplesShareThePromptAndEachMatchesARunOfItsOwn) {
  std::vector<int32_t> prompt(21);
  std::iota(prompt.begin(), prompt.end(), 5);
  const std::string args = "generate" + model("llama-f32.gguf") + " --ids " + id_list(prompt) +
                           " --json --no-stop --max-tokens 8 --temperature 0.9";
  const CliRun run = cli(args + " --seed 11 --n 3");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json doc = json::parse(run.out);
  ASSERT_EQ(doc["samples"].size(), 3u);
  EXPECT_EQ(doc["prefill_tokens"].get<size_t>(), prompt.size());  // once for all three
  EXPECT_EQ(doc["decode_tokens"].get<int64_t>(), 3 * 7);
  std::set<std::vector<int32_t>> distinct;
  for (size_t i = 0; i < 3; ++i) {
    const json& sample = doc["samples"][i];
    EXPECT_EQ(sample["sampling"]["seed"].get<uint64_t>(), 11 + i);
    const CliRun alone = cli(args + " --seed " + std::to_string(11 + i));
    ASSERT_EQ(alone.exit_code, 0) << alone.err;
    EXPECT_EQ(sample["generated_ids"], json::parse(alone.out)["generated_ids"]) << "sample " << i;
    distinct.insert(sample["generated_ids"].get<std::vector<int32_t>>());
  }
  EXPECT_GT(distinct.size(), 1u) << "the seeds were meant to give different samples";
  EXPECT_EQ(doc["generated_ids"], doc["samples"][0]["generated_ids"]);
  // --top: the first sample's token records, as generated_ids.
  const json top = json::parse(cli(args + " --seed 11 --n 3 --top 2").out);
  ASSERT_EQ(top["tokens"].size(), 8u);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(top["tokens"][i]["id"], doc["generated_ids"][i]);

  const servescope::model::ModelConfig config = servescope::model::read_model_config(
      gguf::GgufFile::open(kData + "/models/llama-f32.gguf"));
  const uint64_t per_block =
      serving::kv_bytes_per_block(serving::kv_layout(config, gguf::GgmlType::F32, 16));
  EXPECT_EQ(doc["kv_type"], "f32");
  EXPECT_EQ(doc["kv_bytes_per_block"].get<uint64_t>(), per_block);
  EXPECT_EQ(doc["kv_bytes_saved_by_sharing"].get<uint64_t>(), (3 - 1) * 2 * per_block);
  EXPECT_EQ(doc["kv_copy_on_write_blocks"].get<int64_t>(), 2);

  // As text: each sample under its own heading.
  const CliRun text = cli("generate" + model("llama-f32.gguf") + " --ids 1,2,3 --n 2 --greedy");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("--- sample 1 of 2 ---"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("--- sample 2 of 2 ---"), std::string::npos) << text.out;
  EXPECT_NE(text.err.find("bytes saved"), std::string::npos) << text.err;
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
  // 2 x layers x kv_dim row bytes, kv_dim = kv_heads x head_dim = 2 x 16 = 32 elements: 4 bytes
  // an F32 element, 2 an F16 one, one 34-byte block (fp16 scale + 32 int8) for Q8_0.
  EXPECT_EQ(doc["kv_bytes_per_token"]["f32"], 2 * 2 * 32 * 4);
  EXPECT_EQ(doc["kv_bytes_per_token"]["f16"], 2 * 2 * 32 * 2);
  EXPECT_EQ(doc["kv_bytes_per_token"]["q8_0"], 2 * 2 * 34);
  EXPECT_TRUE(doc["tensor_types"].contains("Q8_0"));
  EXPECT_GT(doc["parameters"].get<int64_t>(), 0);
}

// info shows what an architecture adds: gemma2's soft-caps and sliding window, qwen2's biases.
TEST(Cli, InfoShowsArchitectureSpecifics) {
  const CliRun gemma2 = cli("info" + model("gemma2-f32.gguf"));
  ASSERT_EQ(gemma2.exit_code, 0) << gemma2.err;
  const json doc = json::parse(gemma2.out);
  EXPECT_EQ(doc["architecture"], "gemma2");
  const json& g = doc["architecture_specifics"];
  EXPECT_EQ(g["rope_mode"], "neox");
  EXPECT_EQ(g["ffn_gate"], "gelu");
  EXPECT_EQ(g["attn_logit_softcap"], 5.0);
  EXPECT_EQ(g["final_logit_softcap"], 1.5);
  EXPECT_EQ(g["embedding_scale"], 8.0);  // sqrt(64)
  EXPECT_EQ(g["sliding_window"]["window"], 4);
  EXPECT_EQ(g["sliding_window"]["local_layers"], 1);  // layer 0 of 2
  EXPECT_EQ(g["post_block_norms"], true);

  const json qwen2 = json::parse(cli("info" + model("qwen2-f32.gguf")).out);
  EXPECT_EQ(qwen2["architecture_specifics"]["qkv_bias"], true);
  EXPECT_FALSE(qwen2["architecture_specifics"].contains("sliding_window"));
  const json scaled = json::parse(cli("info" + model("llama-ropescale-f32.gguf")).out);
  EXPECT_EQ(scaled["architecture_specifics"]["rope_scaling"]["factor"], 2.0);
  EXPECT_EQ(scaled["architecture_specifics"]["rope_frequency_factors"], true);
  EXPECT_EQ(scaled["architecture_specifics"]["rope_mode"], "normal");
}

// info shows the provenance keys llama.cpp's converter writes, and null for those missing.
TEST(Cli, InfoShowsProvenanceKeys) {
  const std::string path = servescope::testing_support::per_test_path("provenance_", ".gguf");
  servescope::testing_support::write_gguf_copy(
      kData + "/models/llama-f32.gguf",
      {{"general.author", gguf::Value::str("A. Author")},
       {"general.license", gguf::Value::str("apache-2.0")},
       {"general.url", gguf::Value::str("https://example.org/model")},
       {"general.source.url", gguf::Value::str("https://example.org/source")},
       {"general.quantization_version", gguf::Value::u32(2)},
       {"tokenizer.chat_template", gguf::Value::str("{{ messages }}")}},
      path);
  const json doc = json::parse(cli("info --model " + path).out);
  std::filesystem::remove(path);
  EXPECT_EQ(doc["author"], "A. Author");
  EXPECT_EQ(doc["license"], "apache-2.0");
  EXPECT_EQ(doc["url"], "https://example.org/model");
  EXPECT_EQ(doc["source_url"], "https://example.org/source");
  EXPECT_EQ(doc["quantization_version"], 2);
  EXPECT_EQ(doc["chat_template"], true);

  const json plain = json::parse(cli("info" + model("llama-f32.gguf")).out);
  for (const char* key : {"author", "license", "url", "source_url", "quantization_version"}) {
    EXPECT_TRUE(plain[key].is_null()) << key;
  }
  EXPECT_EQ(plain["chat_template"], false);
}

// info names a byte-level BPE file's pre-tokeniser: the file's tokenizer.ggml.pre and the
// scheme it selects (GPT-2's when the key is absent); a sentencepiece vocabulary has neither.
TEST(Cli, InfoShowsThePreTokenizer) {
  const json plain = json::parse(cli("info" + model("gpt2-f32.gguf")).out);
  EXPECT_TRUE(plain["tokenizer"]["pre"].is_null());
  EXPECT_EQ(plain["tokenizer"]["pre_scheme"], "gpt-2");

  const std::string path = servescope::testing_support::per_test_path("pre_", ".gguf");
  servescope::testing_support::write_gguf_copy(
      kData + "/models/gpt2-f32.gguf",
      {{"tokenizer.ggml.pre", gguf::Value::str("llama3")}},  // an alias of llama-bpe
      path);
  const json named = json::parse(cli("info --model " + path).out);
  std::filesystem::remove(path);
  EXPECT_EQ(named["tokenizer"]["pre"], "llama3");
  EXPECT_EQ(named["tokenizer"]["pre_scheme"], "llama-bpe");

  const json sentencepiece = json::parse(cli("info" + model("llama-f32.gguf")).out);
  EXPECT_FALSE(sentencepiece["tokenizer"].contains("pre"));
}

// info's KV figure is what the serving engine's block pool charges per token, for every KV type
// and both architectures.
TEST(Cli, InfoKvBytesEqualTheBlockPools) {
  for (const std::string name : {"llama-q8_0", "gpt2-f32"}) {
    const CliRun run = cli("info" + model(name + ".gguf"));
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const json reported = json::parse(run.out)["kv_bytes_per_token"];
    const servescope::model::ModelConfig config = servescope::model::read_model_config(
        gguf::GgufFile::open(kData + "/models/" + name + ".gguf"));
    ASSERT_EQ(reported.size(), std::size(serving::kKvTypes)) << name;
    for (const gguf::GgmlType type : serving::kKvTypes) {
      std::string label(gguf::type_name(type));
      std::transform(label.begin(), label.end(), label.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      const serving::KvBlockPool pool(serving::kv_layout(config, type), 1);
      EXPECT_EQ(reported[label].get<uint64_t>(), pool.bytes_per_token()) << name << " " << label;
    }
  }
}

TEST(Cli, TokenizeGivesIdsAndPieces) {
  const CliRun run = cli("tokenize" + model("llama-f32.gguf") + " --text 'Hello world' --no-bos");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json doc = json::parse(run.out);
  EXPECT_EQ(doc["ids"].size(), doc["pieces"].size());
  EXPECT_GT(doc["ids"].size(), 0u);
}

TEST(Cli, TokenizeParsesSpecialTokensOnlyWhenAsked) {
  const std::string args =
      "tokenize" + model("gpt2-f32.gguf") + " --text 'a<|endoftext|>b' --no-bos";
  const CliRun plain = cli(args);
  const CliRun parsed = cli(args + " --parse-special");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(parsed.exit_code, 0) << parsed.err;
  const json plain_pieces = json::parse(plain.out)["pieces"];
  const json parsed_pieces = json::parse(parsed.out)["pieces"];
  EXPECT_EQ(std::count(plain_pieces.begin(), plain_pieces.end(), "<|endoftext|>"), 0);
  EXPECT_EQ(parsed_pieces, json({"a", "<|endoftext|>", "b"}));
}

// Bad input: non-zero exit, nothing on stdout, one line on stderr that says what is wrong.
TEST(Cli, BadInputIsAOneLineReason) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"generate" + model("llama-f32.gguf") + " --ids 1,x,3", "'x' is not a token id"},
      {"generate" + model("llama-f32.gguf") + " --ids 1,99999", "outside the vocabulary"},
      {"generate" + model("llama-f32.gguf") + " --ids 1 --greedy --seed 3", "--greedy cannot"},
      {"generate" + model("llama-f32.gguf") + " --ids 1 --temperature -1", "temperature"},
      {"generate" + model("llama-f32.gguf") + " --ids 1 --top 3", "--top needs --json"},
      {"generate" + model("llama-f32.gguf") + " --ids 1 --n 0", "--n"},
      {"generate" + model("llama-f32.gguf") + " --ids 1 --n 65", "--n"},
      {"generate" + model("llama-f32.gguf") + " --ids 1 --json --top -2",
       "--top -2 is below the limit of 0"},
      {"logits --model /nonexistent.gguf --ids 1", "/nonexistent.gguf"},
      {"logits" + model("llama-f32.gguf") + " --ids 1 --backend tpu", "cpu, vulkan"},
      {"info" + model("llama-f32.gguf") + " --frobnicate", "unknown option --frobnicate"},
      {"explode", "unknown subcommand"},
  };
  servescope::testing_support::expect_one_line_refusals(cases);
}

TEST(Cli, BenchServesSimulatedClientsAndSummarises) {
  const CliRun run = cli("bench" + model("llama-f32.gguf") +
                         " --clients 5 --rate 500 --prompt-tokens 4:12 --output-tokens 3:6"
                         " --max-batch 4 --kv-type q8_0 --block-size 8 --seed 3");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json doc = json::parse(run.out);
  for (const char* key :
       {"prompt_tokens_per_s", "wall_s", "mean_step_ms", "mean_kernel_ms", "achieved_gb_per_s",
        "achieved_gflop_per_s", "kv_peak_bytes", "steps", "engine"}) {
    EXPECT_TRUE(doc.contains(key)) << key;
  }
  EXPECT_TRUE(doc["mean_kernel_ms"].is_object());  // the CPU backend times its kernels
  EXPECT_EQ(doc["requests"], 5);
  EXPECT_EQ(doc["clients"], 5);
  EXPECT_EQ(doc["max_batch"], 4);
  EXPECT_EQ(doc["engine"]["kv_type"], "q8_0");
  EXPECT_EQ(doc["engine"]["block_size"], 8);
  EXPECT_GT(doc["throughput_tokens_per_s"].get<double>(), 0.0);
  EXPECT_GE(doc["output_tokens"].get<int>(), 5 * 3);
  EXPECT_LE(doc["output_tokens"].get<int>(), 5 * 6);
  EXPECT_LE(doc["ttft_ms"]["p50"].get<double>(), doc["ttft_ms"]["p99"].get<double>());
  EXPECT_GT(doc["tpot_ms"]["p50"].get<double>(), 0.0);
  EXPECT_GT(doc["mean_batch_occupancy"].get<double>(), 0.0);
  EXPECT_LE(doc["mean_batch_occupancy"].get<double>(), 1.0);
  EXPECT_GT(doc["kv_peak_blocks"].get<int>(), 0);
  EXPECT_EQ(doc["preemptions"], 0);
}

TEST(Cli, BenchRecomputesPreemptedRequestsInASmallCache) {
  // 6 blocks of 8 tokens: room for about two of the four requests at once.
  const CliRun run = cli("bench" + model("gpt2-f32.gguf") +
                         " --clients 4 --prompt-tokens 12 --output-tokens 16 --max-batch 4"
                         " --block-size 8 --kv-blocks 6");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json doc = json::parse(run.out);
  EXPECT_EQ(doc["output_tokens"], 4 * 16);
  EXPECT_LE(doc["kv_peak_blocks"].get<int>(), 6);
  EXPECT_GT(doc["preemptions"].get<int>(), 0);
}

TEST(Cli, BenchSweepsTheMaxBatchSize) {
  const CliRun run = cli("bench" + model("llama-q8_0.gguf") +
                         " --sweep --sweep-max 4 --prompt-tokens 4:8 --output-tokens 4");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json sweep = json::parse(run.out)["sweep"];
  ASSERT_EQ(sweep.size(), 3u);
  for (size_t i = 0; i < sweep.size(); ++i) {
    const json& point = sweep[i];
    EXPECT_EQ(point["max_batch"], 1 << i);
    EXPECT_EQ(point["clients"], 2 << i);
    for (const char* key :
         {"throughput_tokens_per_s", "mean_step_ms", "achieved_gb_per_s", "achieved_gflop_per_s",
          "mean_batch_occupancy", "decode_tokens_per_s"}) {
      ASSERT_TRUE(point.contains(key)) << key;
      EXPECT_GT(point[key].get<double>(), 0.0) << key << " at max batch " << point["max_batch"];
    }
  }
}

// Static batching with a wait no run of four tiny requests reaches: the batch fills at once and
// runs to its end, so every request is admitted in the first step.
TEST(Cli, BenchStaticPolicyReportsLatencyAndCostPerRequest) {
  const CliRun run = cli("bench" + model("llama-f32.gguf") +
                         " --clients 4 --prompt-tokens 6 --output-tokens 5 --max-batch 4"
                         " --policy static --batch-wait-ms 10000 --price-per-hour 7.2");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json doc = json::parse(run.out);
  EXPECT_EQ(doc["engine"]["policy"], "static");
  EXPECT_EQ(doc["engine"]["batch_wait_ms"], 10000.0);
  EXPECT_EQ(doc["output_tokens"], 4 * 5);
  const json& latency = doc["latency"];
  EXPECT_EQ(latency["load"],
            "4 clients all at t = 0, prompts 6 tokens, 5 output tokens, max batch 4, static "
            "batching (wait up to 10000 ms)");
  EXPECT_EQ(latency["ttft_ms"]["p99"], doc["ttft_ms"]["p99"]);
  EXPECT_EQ(latency["tpot_ms"]["p50"], doc["tpot_ms"]["p50"]);
  const json& cost = doc["cost"];
  const double wall_s = doc["wall_s"].get<double>();
  EXPECT_DOUBLE_EQ(cost["device_seconds_per_request"].get<double>(), wall_s / 4);
  EXPECT_DOUBLE_EQ(cost["price_per_request"].get<double>(), wall_s / 4 * 7.2 / 3600);
  EXPECT_DOUBLE_EQ(cost["price_per_million_output_tokens"].get<double>(),
                   wall_s * 7.2 / 3600 / 20 * 1e6);
  EXPECT_LE(cost["busy_seconds_per_request"].get<double>(),
            cost["device_seconds_per_request"].get<double>());
  EXPECT_DOUBLE_EQ(cost["busy_seconds_per_request"].get<double>(), doc["busy_s"].get<double>() / 4);
  EXPECT_DOUBLE_EQ(doc["busy_throughput_tokens_per_s"].get<double>(),
                   20 / doc["busy_s"].get<double>());
  const json plain = json::parse(
      cli("bench" + model("llama-f32.gguf") + " --clients 2 --prompt-tokens 4 --output-tokens 2")
          .out);
  EXPECT_EQ(plain["engine"]["policy"], "continuous");
  EXPECT_FALSE(plain["cost"].contains("price_per_request"));  // no price given
}

TEST(Cli, BenchRefusesBadOptions) {
  const std::string m = model("llama-f32.gguf");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"bench" + m + " --clients 0", "--clients 0 is below the limit of 1"},
      {"bench" + m + " --prompt-tokens 9:3", "MIN is above MAX"},
      {"bench" + m + " --prompt-tokens x", "--prompt-tokens needs MIN:MAX"},
      {"bench" + m + " --output-tokens 0:4", "--output-tokens 0 is below the limit of 1"},
      {"bench" + m + " --prompt-tokens 500", "exceed the model's context of 128"},
      {"bench" + m + " --kv-type q4_0", "choose one of f32, f16, q8_0"},
      {"bench" + m + " --rate -2", "--rate -2 is below the limit of 0.1 (or 0)"},
      {"bench" + m + " --max-batch 0", "--max-batch 0 is below the limit of 1"},
      {"bench" + m + " --kv-blocks 4 --kv-bytes 100000", "at most one of --kv-blocks"},
      {"bench" + m + " --kv-bytes 1KiB", "less than one KV block"},
      {"bench" + m + " --sweep --max-batch 4", "--sweep sets the max batch size"},
      {"bench" + m + " --sweep-max 4", "--sweep-max needs --sweep"},
      {"bench" + m + " --kv-blocks 2 --block-size 4 --prompt-tokens 20",
       "the prompt needs 20 tokens; the KV budget of"},
      {"bench" + m + " --policy dynamic", "--policy needs continuous or static"},
      {"bench" + m + " --batch-wait-ms 5", "--batch-wait-ms needs --policy static"},
      {"bench" + m + " --policy static --batch-wait-ms -1", "-1 is below the limit of 0"},
      {"bench" + m + " --price-per-hour -3", "--price-per-hour -3 is below the limit of 0"},
  };
  servescope::testing_support::expect_one_line_refusals(cases);
}

}  // namespace
