// servescope-cli's bounds and KV budget: every numeric option refuses an absurd value with the
// limit in the message, --kv-bytes takes a size with its unit, a prompt the budget cannot hold is
// refused naming --kv-bytes, and a file that declares a 128k or 16M context generates in the
// memory of the tokens it holds, not in the gigabytes its declared context would take.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "tests/support/cli_runner.h"
#include "tests/support/gguf_copy.h"

namespace {

using nlohmann::json;
using servescope::testing_support::expect_one_line_refusals;
using servescope::testing_support::run_cli;
namespace gguf = servescope::gguf;

const std::string kData = SERVESCOPE_TEST_DATA_DIR;
const std::string kModel = " --model " + kData + "/models/llama-f32.gguf";
const std::string kBundled =
    std::string(SERVESCOPE_BIN_DIR) + "/../share/servescope/models/servescope-stories.gguf";

TEST(CliBounds, EveryNumericOptionRefusesAnAbsurdValueNamingItsLimit) {
  const std::string m = kModel;
  const std::string out = servescope::testing_support::per_test_path("never_", ".gguf");
  expect_one_line_refusals({
      // the attacks of issue 25
      {"bench" + m + " --max-batch 100000", "--max-batch 100000 is above the limit of 256"},
      {"bench" + m + " --rate 1e-9", "--rate 1e-9 is below the limit of 0.1 (or 0)"},
      {"bench" + m + " --policy static --batch-wait-ms 1e12",
       "--batch-wait-ms 1e12 is above the limit of 60000"},
      {"bench" + m + " --block-size 100000", "--block-size 100000 is above the limit of 256"},
      // the serving engine and the load
      {"bench" + m + " --clients 100000", "--clients 100000 is above the limit of 10000"},
      {"bench" + m + " --token-budget 0", "--token-budget 0 is below the limit of 1"},
      {"bench" + m + " --token-budget 1e6", "--token-budget needs an integer"},
      {"bench" + m + " --token-budget 1000000",
       "--token-budget 1000000 is above the limit of 65536"},
      {"bench" + m + " --kv-blocks 2000000", "--kv-blocks 2000000 is above the limit of 1048576"},
      {"bench" + m + " --kv-bytes 2TiB", "--kv-bytes 2TiB is above the limit of 1.0 TiB"},
      {"bench" + m + " --kv-bytes 100", "--kv-bytes 100 is below the limit of 1.0 KiB"},
      {"bench" + m + " --kv-bytes lots", "--kv-bytes needs a size such as 256MiB"},
      {"bench" + m + " --prompt-tokens 1:2000000",
       "--prompt-tokens 2000000 is above the limit of 1048576"},
      {"bench" + m + " --output-tokens 2000000",
       "--output-tokens 2000000 is above the limit of 1048576"},
      {"bench" + m + " --sweep --sweep-max 64", "--sweep-max 64 is above the limit of 32"},
      {"bench" + m + " --price-per-hour 1e9", "--price-per-hour 1e9 is above the limit of 1000000"},
      {"bench" + m + " --seed -5", "--seed -5 is below the limit of 0"},
      // generation
      {"generate" + m + " --ids 1 --max-tokens 0", "--max-tokens 0 is below the limit of 1"},
      {"generate" + m + " --ids 1 --max-tokens 5000000",
       "--max-tokens 5000000 is above the limit of 1048576"},
      {"generate" + m + " --ids 1 --temperature 1000",
       "--temperature 1000 is above the limit of 100"},
      {"generate" + m + " --ids 1 --top-k -1", "--top-k -1 is below the limit of 0"},
      {"generate" + m + " --ids 1 --top-p 2", "--top-p 2 is above the limit of 1"},
      {"generate" + m + " --ids 1 --json --top 1000", "--top 1000 is above the limit of 100"},
      {"generate" + m + " --ids 1 --threads 2000", "--threads 2000 is above the limit of 1024"},
      {"generate" + m + " --ids 1 --device 5000", "--device 5000 is above the limit of 1023"},
      {"generate" + m + " --ids 1 --kv-bytes 0", "--kv-bytes 0 is below the limit of 1.0 KiB"},
      // evaluation
      {"perplexity" + m + " --max-chunks -1", "--max-chunks -1 is below the limit of 0"},
      {"quant-report" + m + " --greedy-tokens 100000",
       "--greedy-tokens 100000 is above the limit of 4096"},
      {"quant-report" + m + " --max-kl -1", "--max-kl -1 is below the limit of 0"},
      {"quant-report" + m + " --min-speedup 1e9", "--min-speedup 1e9 is above the limit of 1000"},
      {"quant-report" + m + " --max-tpot-ms 1e9",
       "--max-tpot-ms 1e9 is above the limit of 1000000"},
      {"attention" + m + " --ids 1 --layer 100000 --head 0",
       "--layer 100000 is above the limit of 65535"},
      {"attention" + m + " --ids 1 --layer 0 --head -1", "--head -1 is below the limit of 0"},
      // make-model's shape
      {"make-model --dim 100000 --layers 1 --out " + out,
       "--dim 100000 is above the limit of 65536"},
      {"make-model --dim 64 --layers 5000 --out " + out,
       "--layers 5000 is above the limit of 1024"},
      {"make-model --dim 64 --layers 1 --ffn 0 --out " + out, "--ffn 0 is below the limit of 1"},
      {"make-model --dim 64 --layers 1 --heads 0 --out " + out,
       "--heads 0 is below the limit of 1"},
      {"make-model --dim 64 --layers 1 --kv-heads 100000 --out " + out,
       "--kv-heads 100000 is above the limit of 65536"},
      {"make-model --dim 64 --layers 1 --context 8 --out " + out,
       "--context 8 is below the limit of 16"},
      {"make-model --dim 64 --layers 1 --vocab 5000000 --out " + out,
       "--vocab 5000000 is above the limit of 1048576"},
  });
  EXPECT_FALSE(std::filesystem::exists(out));
}

// A cache bigger than this machine's memory is refused before anything is allocated: 1023 GiB
// of budget, or 2^28 tokens of the bundled model's F32 keys and values (1.25 TiB).
TEST(CliBounds, AKvCacheAboveTheMachinesMemoryIsRefused) {
  expect_one_line_refusals({{"bench" + kModel + " --kv-bytes 1023GiB", "(this machine's memory)"}});
  if (!std::filesystem::exists(kBundled)) GTEST_SKIP() << "the bundled model is not installed";
  expect_one_line_refusals(
      {{"bench --model " + kBundled + " --kv-blocks 1048576 --block-size 256 --kv-type f32",
        "(this machine's memory)"}});
}

TEST(CliKvBudget, KvBytesTakesASizeWithItsUnit) {
  for (const std::string size : {"64KiB", "64k", "65536", "0.0625MiB"}) {
    const servescope::testing_support::CliRun run =
        run_cli("bench" + kModel + " --clients 1 --prompt-tokens 4 --output-tokens 2 --kv-bytes " +
                size + " --kv-type f32");
    ASSERT_EQ(run.exit_code, 0) << size << ": " << run.err;
    const json engine = json::parse(run.out)["engine"];
    EXPECT_LE(engine["kv_bytes"].get<uint64_t>(), 65536u) << size;
    EXPECT_EQ(engine["kv_bytes"].get<uint64_t>(),
              engine["kv_blocks"].get<uint64_t>() * engine["kv_bytes_per_block"].get<uint64_t>());
  }
}

TEST(CliKvBudget, APromptTheBudgetCannotHoldNamesKvBytes) {
  // f32 KV of the test model: a block of 16 tokens is far more than 1 KiB... so find the block's
  // bytes first and give a budget of two blocks.
  const json engine = json::parse(run_cli("bench" + kModel +
                                          " --clients 1 --prompt-tokens 4 --output-tokens 2"
                                          " --kv-type f32 --kv-blocks 1")
                                      .out)["engine"];
  const uint64_t per_block = engine["kv_bytes_per_block"].get<uint64_t>();
  std::string ids = "1";
  for (int i = 0; i < 40; ++i) ids += ",1";  // 41 tokens; two blocks hold 32
  expect_one_line_refusals({
      {"generate" + kModel + " --greedy --max-tokens 2 --ids " + ids + " --kv-bytes " +
           std::to_string(2 * per_block),
       "the prompt needs 41 tokens; the KV budget of"},
      {"generate" + kModel + " --greedy --max-tokens 2 --ids " + ids + " --kv-bytes " +
           std::to_string(2 * per_block),
       "holds 32 tokens; raise --kv-bytes"},
  });
}

// The peak resident memory of a servescope-cli run (its own rusage, from wait4), in bytes.
uint64_t peak_resident_bytes(const std::vector<std::string>& args) {
  const std::string program = std::string(SERVESCOPE_BIN_DIR) + "/servescope-cli";
  std::vector<char*> argv{const_cast<char*>(program.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    execv(program.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  EXPECT_EQ(wait4(pid, &status, 0, &usage), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "servescope-cli failed";
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // ru_maxrss is in KiB
}

// Issue 25: the bundled model declaring 131072 tokens of context took 709 MB to generate 4
// tokens (its KV cache sized for the whole context), and with 2^24 it was killed at 23 GB. Now
// it takes what its own 256-token context takes, give or take 64 MiB: the pool is sized by the
// budget, and on the CPU only the pages of the tokens written become resident.
TEST(CliKvBudget, AModelDeclaringAHugeContextGeneratesInTheMemoryOfItsTokens) {
  if (!std::filesystem::exists(kBundled)) GTEST_SKIP() << "the bundled model is not installed";
  const std::vector<std::string> generate = {
      "generate", "--prompt", "Once upon a time", "--max-tokens", "4", "--greedy", "--model"};
  const auto peak_with = [&](const std::string& model) {
    std::vector<std::string> args = generate;
    args.push_back(model);
    return peak_resident_bytes(args);
  };
  const uint64_t own_context = peak_with(kBundled);
  for (const uint32_t context : {131072u, 1u << 24}) {
    const std::string path = servescope::testing_support::per_test_path(
        "context_" + std::to_string(context) + "_", ".gguf");
    servescope::testing_support::write_gguf_copy(
        kBundled, {{"llama.context_length", gguf::Value::u32(context)}}, path);
    const uint64_t peak = peak_with(path);
    std::filesystem::remove(path);
    EXPECT_LT(peak, uint64_t{400} << 20) << "context " << context;
    EXPECT_LT(peak, own_context + (uint64_t{64} << 20))
        << "context " << context << ": " << peak << " bytes against " << own_context;
  }
}

}  // namespace
