// Runs the real servescope-cli binary for contract tests: stdout, stderr and the exit code.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace servescope::testing_support {

struct CliRun {
  int exit_code;
  std::string out;
  std::string err;
};

// A path in the test temp dir unique to the running test process: ctest runs tests as
// parallel processes, and two suites may hold tests of the same name.
inline std::string per_test_path(const std::string& prefix, const std::string& suffix) {
  const testing::TestInfo& test = *testing::UnitTest::GetInstance()->current_test_info();
  return testing::TempDir() + "/" + prefix + test.test_suite_name() + "." + test.name() + "." +
         std::to_string(getpid()) + suffix;
}

// `args` goes through the shell, so quote text arguments ('...').
inline CliRun run_cli(const std::string& args) {
  const std::string err_file = per_test_path("cli_stderr_", ".txt");
  const std::string command =
      std::string(SERVESCOPE_BIN_DIR) + "/servescope-cli " + args + " 2>" + err_file;
  FILE* pipe = popen(command.c_str(), "r");
  CliRun run{-1, "", ""};
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) run.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  {
    std::ifstream err(err_file);
    run.err.assign(std::istreambuf_iterator<char>(err), {});
  }
  std::remove(err_file.c_str());
  return run;
}

// Starts servescope-cli with `args` (no shell) in the background, its stdout and stderr into
// the files `out` and `err`, for tests that signal it while it runs; the child's pid, or -1.
inline pid_t start_cli(const std::vector<std::string>& args, const std::string& out,
                       const std::string& err) {
  std::vector<std::string> words = {std::string(SERVESCOPE_BIN_DIR) + "/servescope-cli"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = -1;
  const int error = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return error == 0 ? pid : -1;
}

// The text of a file (empty if it cannot be read).
inline std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The command-line contract for bad input: for each (arguments, expected reason), a non-zero
// exit, nothing on stdout, and one line on stderr that contains the reason.
inline void expect_one_line_refusals(
    const std::vector<std::pair<std::string, std::string>>& cases) {
  for (const auto& [args, reason] : cases) {
    const CliRun run = run_cli(args);
    EXPECT_NE(run.exit_code, 0) << args;
    EXPECT_TRUE(run.out.empty()) << args;
    EXPECT_NE(run.err.find(reason), std::string::npos) << args << " -> " << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  }
}

}  // namespace servescope::testing_support
