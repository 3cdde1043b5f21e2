// Opening and reading files that must be regular files: a model, a text, a lesson. open() on a
// FIFO blocks until a writer comes (forever, for a FIFO nobody writes), and reading a folder
// fails deep inside the stream library; both are refused up front with a one-line reason that
// names the path and what it is ("m.gguf is a FIFO, not a regular file").
#pragma once

#include <filesystem>
#include <string>

#include "engine/core/error.h"

namespace servescope {

// A file that cannot be opened or read, or is not a regular file.
class FileError : public Error {
 public:
  using Error::Error;
};

// "a FIFO", "a directory", "a character device", ... for a st_mode that is not a regular file.
std::string file_kind_name(unsigned mode);

// Opens `path` read-only after checking it is a regular file: stat() first, so a FIFO is never
// opened, then a non-blocking open() and fstat() on the descriptor, so a file swapped for a
// FIFO in between is refused too. Returns the descriptor (blocking again, close-on-exec); the
// caller closes it. Throws FileError naming the path.
int open_regular_file(const std::filesystem::path& path);

// The whole content of a regular file (open_regular_file's checks). Throws FileError.
std::string read_regular_file(const std::filesystem::path& path);

}  // namespace servescope
