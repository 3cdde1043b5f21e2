#include "app/cli/output_path.h"

#include <unistd.h>

#include "app/cli/cli_options.h"

namespace servescope::cli {

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
  std::error_code ignored;
  if (std::filesystem::equivalent(out, in, ignored)) {
    throw UsageError("--out is the input file " + in.string() + "; choose another path");
  }
}

void write_via_partial(const std::filesystem::path& out,
                       const std::function<void(const std::filesystem::path& partial)>& write) {
  const std::filesystem::path partial = out.string() + ".partial";
  try {
    write(partial);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(partial, ignored);
    throw;
  }
  std::filesystem::rename(partial, out);
}

}  // namespace servescope::cli
