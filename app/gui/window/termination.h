// A window closed by SIGTERM, SIGINT or SIGHUP (a logout, `kill`, Ctrl+C in the terminal) the
// way File > Quit closes it: its close event runs, so a lesson gives back its settings and the
// window saves them. Killed with the default handlers, the app lost the learner's settings and
// window size. The handler only writes a byte to a socket; the event loop does the closing.
#pragma once

#include <QObject>
#include <csignal>

class QSocketNotifier;
class QWidget;

namespace servescope::gui {

class TerminationCloser : public QObject {
 public:
  // Closes `window` on those signals while this object lives; the previous handlers come back
  // when it is destroyed. One at a time.
  explicit TerminationCloser(QWidget& window);
  ~TerminationCloser() override;
  TerminationCloser(const TerminationCloser&) = delete;
  TerminationCloser& operator=(const TerminationCloser&) = delete;

 private:
  static constexpr int kSignals[] = {SIGTERM, SIGINT, SIGHUP};
  QWidget& window_;
  QSocketNotifier* notifier_ = nullptr;
  struct sigaction previous_[3] = {};
};

}  // namespace servescope::gui
