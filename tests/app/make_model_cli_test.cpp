// servescope-cli make-model, run as the real binary: the file it writes loads, says that its
// weights are random (info), generates, repeats by seed; bad input is a one-line refusal. The
// output rules make-model and quantize share (app/cli/output_path.h): special files are never
// replaced, and an interrupted run leaves no partial file.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/support/cli_runner.h"

namespace {

using nlohmann::json;
using servescope::testing_support::CliRun;

CliRun cli(const std::string& args) { return servescope::testing_support::run_cli(args); }

std::string temp_path(const std::string& suffix) {
  return servescope::testing_support::per_test_path("make_model_cli_", suffix);
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

const std::string kBundled =
    std::string(SERVESCOPE_BIN_DIR) + "/../share/servescope/models/servescope-stories.gguf";

TEST(MakeModelCli, WritesARandomModelThatInfoMarksAndGenerateRuns) {
  const std::string out = temp_path(".gguf");
  const CliRun made = cli("make-model --dim 64 --layers 2 --type q4_0 --seed 5 --out " + out);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const json doc = json::parse(made.out);
  EXPECT_EQ(doc["random_weights"], true);
  EXPECT_EQ(doc["type"], "q4_0");
  EXPECT_EQ(doc["shape"]["dim"], 64);
  EXPECT_EQ(doc["shape"]["layers"], 2);
  EXPECT_EQ(doc["file_bytes"].get<uint64_t>(), std::filesystem::file_size(out));
  EXPECT_FALSE(std::filesystem::exists(out + ".partial"));

  const CliRun info = cli("info --model " + out);
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const json facts = json::parse(info.out);
  EXPECT_EQ(facts["random_weights"], true);
  EXPECT_EQ(facts["note"], "random weights: timing only, text is meaningless");
  EXPECT_EQ(facts["parameters"], doc["parameters"]);
  EXPECT_EQ(facts["weight_bytes"], doc["weight_bytes"]);
  EXPECT_EQ(facts["tokenizer"]["tokens"], 2048);
  EXPECT_EQ(facts["quantization_version"], 2);  // written as llama.cpp does

  const CliRun generated =
      cli("generate --model " + out + " --ids 1,2,3 --greedy --json --no-stop --max-tokens 8");
  ASSERT_EQ(generated.exit_code, 0) << generated.err;
  EXPECT_EQ(json::parse(generated.out)["generated_ids"].size(), 8u);

  // The bundled model says it is not random, and names itself and its licence.
  const json bundled = json::parse(cli("info").out);
  EXPECT_EQ(bundled["random_weights"], false);
  EXPECT_TRUE(bundled["name"].is_string());
  EXPECT_TRUE(bundled["license"].is_string());
  EXPECT_EQ(bundled["chat_template"], false);
  std::filesystem::remove(out);
}

TEST(MakeModelCli, SameSeedSameFileOtherSeedOtherFile) {
  const std::string a = temp_path(".a.gguf");
  const std::string b = temp_path(".b.gguf");
  const std::string c = temp_path(".c.gguf");
  const std::string shape = "make-model --dim 96 --layers 1 --heads 3 --type q8_0 ";
  ASSERT_EQ(cli(shape + "--seed 9 --out " + a).exit_code, 0);
  ASSERT_EQ(cli(shape + "--seed 9 --out " + b).exit_code, 0);
  // A seed of as many digits: the description names the seed, and one more character can move
  // the tensor data to the next 32-byte boundary.
  ASSERT_EQ(cli(shape + "--seed 8 --out " + c).exit_code, 0);
  EXPECT_EQ(file_bytes(a), file_bytes(b));
  EXPECT_NE(file_bytes(a), file_bytes(c));
  EXPECT_EQ(file_bytes(a).size(), file_bytes(c).size());
  for (const std::string& path : {a, b, c}) std::filesystem::remove(path);
}

TEST(MakeModelCli, BadInputIsAOneLineRefusal) {
  const std::string out = temp_path(".gguf");
  const std::string& bundled = kBundled;
  servescope::testing_support::expect_one_line_refusals({
      {"make-model --params 25M", "needs --out"},
      {"make-model --params 3B --out " + out, "unknown model size '3B'; choose one of 25M"},
      {"make-model --out " + out, "needs either --params"},
      {"make-model --params 25M --dim 64 --out " + out, "not both"},
      {"make-model --dim 64 --out " + out, "needs both --dim D and --layers L"},
      {"make-model --dim 96 --layers 1 --heads 5 --out " + out, "multiple of heads"},
      {"make-model --dim 80 --layers 1 --heads 2 --type q4_0 --out " + out, "multiples of 32"},
      {"make-model --dim 64 --layers 0 --out " + out, "--layers 0 is below the limit of 1"},
      {"make-model --dim 64 --layers 1 --type iq4_xs --out " + out, "unknown weight type"},
      {"make-model --dim 64 --layers 1 --seed -1 --out " + out, "--seed -1 is below the limit of 0"},
      {"make-model --params 25M --out " + bundled, "is the input file"},
      {"make-model --params 25M --out /no/such/folder/x.gguf", "does not exist"},
  });
  EXPECT_FALSE(std::filesystem::exists(out));
}

// A FIFO and a symlink to a character device as --out: both subcommands that write a model
// refuse them with a one-line reason, and leave them as they were (the final rename would have
// replaced them with a regular file; as root, --out /dev/null would replace /dev/null).
TEST(OutputFile, SpecialFilesAreRefusedAndLeftAlone) {
  const std::string fifo = temp_path(".fifo.gguf");
  const std::string device_link = temp_path(".zero.gguf");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_symlink("/dev/zero", device_link);
  servescope::testing_support::expect_one_line_refusals({
      {"make-model --dim 64 --layers 1 --out " + fifo, "is a FIFO, not a regular file"},
      {"quantize --model " + kBundled + " --type q8_0 --out " + fifo,
       "is a FIFO, not a regular file"},
      {"make-model --dim 64 --layers 1 --out " + device_link,
       "is a character device, not a regular file"},
      {"quantize --model " + kBundled + " --type q8_0 --out " + device_link,
       "is a character device, not a regular file"},
  });
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));
  EXPECT_TRUE(std::filesystem::is_symlink(device_link));
  EXPECT_TRUE(std::filesystem::is_character_file(device_link));
  std::filesystem::remove(fifo);
  std::filesystem::remove(device_link);
}

// A signal while the model is being written ends the run and removes OUT.partial: a 400M f32
// model takes seconds to write, and the signal comes once the partial file holds data.
void expect_signal_removes_partial(int signal_number) {
  const std::string out = temp_path(".gguf");
  const std::string partial = out + ".partial";
  const std::string log = temp_path(".log");
  const pid_t pid = servescope::testing_support::start_cli(
      {"make-model", "--params", "400M", "--type", "f32", "--out", out}, log, log + ".err");
  ASSERT_GT(pid, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  const auto partial_bytes = [&] {
    std::error_code missing;
    const uintmax_t bytes = std::filesystem::file_size(partial, missing);
    return missing ? uintmax_t{0} : bytes;
  };
  while (partial_bytes() < (1u << 20) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const bool writing = std::filesystem::exists(partial);
  kill(pid, signal_number);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  const std::string err = servescope::testing_support::file_text(log + ".err");
  std::filesystem::remove(log);
  std::filesystem::remove(log + ".err");
  ASSERT_TRUE(writing) << "the partial file never appeared: " << err;
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status << ": " << err;
  EXPECT_EQ(WTERMSIG(status), signal_number);
  EXPECT_FALSE(std::filesystem::exists(partial));
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(OutputFile, SigtermRemovesThePartialFile) { expect_signal_removes_partial(SIGTERM); }
TEST(OutputFile, SigintRemovesThePartialFile) { expect_signal_removes_partial(SIGINT); }

}  // namespace
