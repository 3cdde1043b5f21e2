// servescope-cli and the files it is given: special files (a FIFO, a folder) refused with a
// one-line reason and without hanging, --prompt-file, nothing printed for a refused request,
// bench's progress into a pipe and its summary on Ctrl-C, and Vulkan that cannot start.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/support/cli_runner.h"

namespace {

using nlohmann::json;
using servescope::testing_support::CliRun;
using servescope::testing_support::file_text;

const std::string kModels = std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/";

CliRun cli(const std::string& args) { return servescope::testing_support::run_cli(args); }

std::string temp_path(const std::string& suffix) {
  return servescope::testing_support::per_test_path("cli_files_", suffix);
}

// A FIFO as model or text would block open() until a writer comes; a folder as text failed
// with "basic_filebuf::underflow". Each is a one-line reason naming the path and what it is.
TEST(CliFiles, SpecialFilesAreRefusedWithoutHanging) {
  const std::string fifo = temp_path(".fifo");
  const std::string folder = temp_path(".dir");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_directory(folder);
  const std::string model = " --model " + kModels + "llama-f32.gguf";
  servescope::testing_support::expect_one_line_refusals({
      {"info --model " + fifo, fifo + " is a FIFO, not a regular file"},
      {"generate --ids 1 --model " + fifo, fifo + " is a FIFO, not a regular file"},
      {"info --model " + folder, folder + " is a directory, not a regular file"},
      {"perplexity" + model + " --text-file " + folder,
       folder + " is a directory, not a regular file"},
      {"perplexity" + model + " --text-file " + fifo, fifo + " is a FIFO, not a regular file"},
      {"kv-error --kv-type q8_0" + model + " --text-file " + fifo,
       fifo + " is a FIFO, not a regular file"},
      {"generate" + model + " --prompt-file " + fifo, fifo + " is a FIFO, not a regular file"},
      {"generate" + model + " --prompt-file " + folder,
       folder + " is a directory, not a regular file"},
  });
  std::filesystem::remove(fifo);
  std::filesystem::remove(folder);
}

TEST(CliFiles, GenerateReadsThePromptFromAFile) {
  const std::string prompt_file = temp_path(".txt");
  std::ofstream(prompt_file) << "Once upon a time";
  const std::string args = "generate --model " + kModels + "llama-f32.gguf --greedy --json " +
                           "--no-stop --max-tokens 3";
  const CliRun from_file = cli(args + " --prompt-file " + prompt_file);
  const CliRun from_argument = cli(args + " --prompt 'Once upon a time'");
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  ASSERT_EQ(from_argument.exit_code, 0) << from_argument.err;
  EXPECT_EQ(json::parse(from_file.out)["prompt_ids"], json::parse(from_argument.out)["prompt_ids"]);
  EXPECT_EQ(json::parse(from_file.out)["generated_ids"],
            json::parse(from_argument.out)["generated_ids"]);
  servescope::testing_support::expect_one_line_refusals({
      {args + " --prompt-file " + prompt_file + " --prompt 'x'",
       "give exactly one of --prompt TEXT, --prompt-file PATH or --ids 1,2,3"},
  });
  std::filesystem::remove(prompt_file);
}

// A prompt longer than an argument may be (the kernel caps one at 128 KiB) goes in a file; this
// one is also longer than the model's context, so the request is refused, and nothing of the
// prompt reaches stdout before the reason (the prompt used to be echoed first).
TEST(CliFiles, GeneratePrintsNothingForARefusedRequest) {
  const std::string prompt_file = temp_path(".txt");
  {
    std::ofstream out(prompt_file);
    for (int i = 0; i < 20000; ++i) out << "Once upon a time ";
  }
  ASSERT_GT(std::filesystem::file_size(prompt_file), 128u * 1024u);
  const std::string model = " --model " + kModels + "llama-f32.gguf";
  servescope::testing_support::expect_one_line_refusals({
      {"generate" + model + " --prompt-file " + prompt_file, "more than the model's context"},
      {"generate" + model + " --ids 1,999999", "outside the vocabulary"},
  });
  std::filesystem::remove(prompt_file);
}

// Into a pipe or file, bench writes a progress line every two seconds; Ctrl-C finishes the
// current step, stops and prints the summary of the requests that completed, marked
// "interrupted", with exit status 130.
TEST(CliFiles, BenchShowsProgressWhenPipedAndSummarisesOnInterrupt) {
  const std::string out = temp_path(".json");
  const std::string err = temp_path(".err");
  const int clients = 1000;  // minutes of work: the run is always interrupted
  const pid_t pid = servescope::testing_support::start_cli(
      {"bench", "--clients", std::to_string(clients), "--max-batch", "4", "--prompt-tokens", "8:16",
       "--output-tokens", "120:120"},
      out, err);
  ASSERT_GT(pid, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (file_text(err).find(" requests done\n") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  const std::string progress = file_text(err);
  const std::string summary = file_text(out);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  EXPECT_NE(progress.find("bench: "), std::string::npos) << progress;
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status << ": " << progress;
  EXPECT_EQ(WEXITSTATUS(status), 130) << progress;
  const json doc = json::parse(summary);
  EXPECT_TRUE(doc["interrupted"].get<bool>());
  EXPECT_EQ(doc["clients"], clients);
  EXPECT_LT(doc["requests"].get<int>(), clients);
}

// A Vulkan ICD file that is garbage makes the loader answer VK_ERROR_OUT_OF_HOST_MEMORY: the
// message says Vulkan could not start and that the CPU backend works, not "try a smaller
// model". Skipped where no Vulkan loader is present.
TEST(CliFiles, BrokenVulkanDriverSaysVulkanCouldNotStart) {
  const std::string icd = temp_path(".json");
  std::ofstream(icd) << "not json at all {{{";
  setenv("VK_ICD_FILENAMES", icd.c_str(), 1);
  const CliRun run =
      cli("generate --backend vulkan --ids 1 --max-tokens 1 --model " + kModels + "llama-f32.gguf");
  unsetenv("VK_ICD_FILENAMES");
  std::filesystem::remove(icd);
  if (run.err.find("the Vulkan loader (") != std::string::npos) GTEST_SKIP() << run.err;
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_TRUE(run.out.empty());
  EXPECT_EQ(run.err.find("smaller model"), std::string::npos) << run.err;
  const bool says_why = run.err.find("Vulkan could not start") != std::string::npos ||
                        run.err.find("no Vulkan 1.1 driver") != std::string::npos;
  EXPECT_TRUE(says_why) << run.err;
  EXPECT_NE(run.err.find("--backend cpu"), std::string::npos) << run.err;
}

}  // namespace
