#include "app/gui/window/termination.h"

#include <sys/socket.h>
#include <unistd.h>

#include <QSocketNotifier>
#include <QWidget>
#include <cerrno>
#include <stdexcept>

namespace servescope::gui {
namespace {

int socket_ends[2] = {-1, -1};  // [0]: the handler writes, [1]: the event loop reads

void on_signal(int signal_number) {
  const int saved = errno;  // a handler must leave errno as it found it
  const char byte = static_cast<char>(signal_number);
  [[maybe_unused]] const ssize_t written = ::write(socket_ends[0], &byte, 1);
  errno = saved;
}

}  // namespace

TerminationCloser::TerminationCloser(QWidget& window) : QObject(&window), window_(window) {
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, socket_ends) != 0) {
    throw std::runtime_error("cannot create the socket pair for termination signals");
  }
  notifier_ = new QSocketNotifier(socket_ends[1], QSocketNotifier::Read, this);
  connect(notifier_, &QSocketNotifier::activated, this, [this] {
    char byte = 0;
    [[maybe_unused]] const ssize_t read = ::read(socket_ends[1], &byte, 1);
    window_.close();
  });
  struct sigaction action = {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &action, &previous_[i]);
}

TerminationCloser::~TerminationCloser() {
  for (size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &previous_[i], nullptr);
  delete notifier_;
  notifier_ = nullptr;
  for (int& end : socket_ends) {
    if (end >= 0) ::close(end);
    end = -1;
  }
}

}  // namespace servescope::gui
