// Checks on an output file a subcommand is about to write.
#pragma once

#include <filesystem>
#include <functional>

namespace servescope::cli {

// Refuses an output the run could not write, before any work is done: a missing or
// unwritable folder, a folder given as the file, a special file (a FIFO, a device or a symlink
// to one: the final rename would replace it), or the input itself (which is memory-mapped
// while we read it). UsageError with a one-line reason.
void check_output_path(const std::filesystem::path& out, const std::filesystem::path& in);

// Runs `write` on "<out>.partial", then renames it to `out`: a failed run never leaves half a
// file behind or destroys a file that was there (the partial file is removed, the error
// rethrown; SIGINT, SIGTERM and SIGHUP remove it too). A path that became a special file
// while the run wrote is refused, not replaced.
void write_via_partial(const std::filesystem::path& out,
                       const std::function<void(const std::filesystem::path& partial)>& write);

}  // namespace servescope::cli
