#include "engine/core/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace servescope {
namespace {

[[noreturn]] void throw_errno(const std::filesystem::path& path, const std::string& what,
                              int error_number) {
  throw FileError(path.string() + ": " + what + ": " + std::strerror(error_number));
}

void require_regular(const std::filesystem::path& path, const struct stat& info) {
  if (!S_ISREG(info.st_mode)) {
    throw FileError(path.string() + " is " + file_kind_name(info.st_mode) + ", not a regular file");
  }
}

// Closes the descriptor unless released: every error path out of open_regular_file closes it.
class DescriptorGuard {
 public:
  explicit DescriptorGuard(int fd) : fd_(fd) {}
  DescriptorGuard(const DescriptorGuard&) = delete;
  DescriptorGuard& operator=(const DescriptorGuard&) = delete;
  ~DescriptorGuard() {
    if (fd_ >= 0) ::close(fd_);
  }
  int release() { return std::exchange(fd_, -1); }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::string file_kind_name(unsigned mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISREG(mode)) return "a regular file";
  return "not a regular file";
}

int open_regular_file(const std::filesystem::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) throw_errno(path, "cannot open", errno);
  require_regular(path, info);
  DescriptorGuard fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) throw_errno(path, "cannot open", errno);
  if (::fstat(fd.get(), &info) != 0) throw_errno(path, "cannot stat", errno);
  require_regular(path, info);
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
    throw_errno(path, "cannot open", errno);
  }
  return fd.release();
}

std::string read_regular_file(const std::filesystem::path& path) {
  DescriptorGuard fd(open_regular_file(path));
  std::string content;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n == 0) return content;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno(path, "cannot read", errno);
    }
    content.append(buffer, static_cast<size_t>(n));
  }
}

}  // namespace servescope
