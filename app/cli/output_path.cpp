#include "app/cli/output_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <cstring>

#include "app/cli/cli_options.h"
#include "engine/core/regular_file.h"

namespace servescope::cli {
namespace {

// The run replaces `path` by renaming a new file over it: right for a regular file, wrong for
// anything else (a FIFO, /dev/null, a symlink to a device), which would be destroyed.
void refuse_special_file(const std::filesystem::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || S_ISREG(info.st_mode)) return;  // new or regular
  throw UsageError("--out " + path.string() + " is " + file_kind_name(info.st_mode) +
                   ", not a regular file; ServeScope writes only new or regular files");
}

// The partial file that an interrupting signal removes. A handler may only call
// async-signal-safe functions, so the path is copied into a plain buffer beforehand.
std::array<char, 4096> g_partial_path{};
volatile std::sig_atomic_t g_partial_armed = 0;

extern "C" void remove_partial_and_reraise(int signal_number) {
  if (g_partial_armed != 0) ::unlink(g_partial_path.data());
  // SA_RESETHAND restored the default action on entry: this ends the process as the signal
  // would have, with the status a shell expects (128 + signal).
  ::raise(signal_number);
}

// While it lives, SIGINT, SIGTERM and SIGHUP remove `partial` before ending the process
// (Ctrl-C or a kill during a long quantize would otherwise leave OUT.partial behind).
class RemoveOnSignal {
 public:
  explicit RemoveOnSignal(const std::filesystem::path& partial) {
    const std::string& path = partial.native();
    if (path.size() >= g_partial_path.size()) return;  // not armed: removed on errors only
    std::memcpy(g_partial_path.data(), path.c_str(), path.size() + 1);
    g_partial_armed = 1;
    struct sigaction action {};
    action.sa_handler = remove_partial_and_reraise;
    action.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &action, &previous_[i]);
  }
  RemoveOnSignal(const RemoveOnSignal&) = delete;
  RemoveOnSignal& operator=(const RemoveOnSignal&) = delete;
  ~RemoveOnSignal() {
    if (g_partial_armed == 0) return;
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &previous_[i], nullptr);
    g_partial_armed = 0;
  }

 private:
  static constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, kSignals.size()> previous_{};
};

}  // namespace

void check_output_path(const std::filesystem::path& out, const std::filesystem::path& in) {
  const std::filesystem::path folder = out.has_parent_path() ? out.parent_path() : ".";
  if (!std::filesystem::is_directory(folder)) {
    throw UsageError("cannot write " + out.string() + ": folder " + folder.string() +
                     " does not exist");
  }
  if (access(folder.c_str(), W_OK) != 0) {
    throw UsageError("cannot write " + out.string() + ": folder " + folder.string() +
                     " is not writable");
  }
  if (std::filesystem::is_directory(out)) {
    throw UsageError("--out " + out.string() + " is a folder; give a file name");
  }
  refuse_special_file(out);
  refuse_special_file(out.string() + ".partial");
  std::error_code ignored;
  if (std::filesystem::equivalent(out, in, ignored)) {
    throw UsageError("--out is the input file " + in.string() + "; choose another path");
  }
}

void write_via_partial(const std::filesystem::path& out,
                       const std::function<void(const std::filesystem::path& partial)>& write) {
  const std::filesystem::path partial = out.string() + ".partial";
  const RemoveOnSignal remove_on_signal(partial);
  try {
    write(partial);
    refuse_special_file(out);  // again: the path may have changed while the run wrote
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(partial, ignored);
    throw;
  }
  std::filesystem::rename(partial, out);
}

}  // namespace servescope::cli
