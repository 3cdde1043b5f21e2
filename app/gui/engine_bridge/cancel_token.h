// A cancellation token for long work on the engine thread (a batch sweep, a staggered load,
// the quantisation lab): the window keeps one copy and the work another, and cancel() from
// any thread is seen by the work at its next step. A fresh token per start means a cancel
// sent before the work began still counts, and one sent after it ended changes nothing.
#pragma once

#include <atomic>
#include <memory>

namespace servescope::gui {

class CancelToken {
 public:
  CancelToken() : flag_(std::make_shared<std::atomic<bool>>(false)) {}

  void cancel() const { flag_->store(true); }
  bool cancelled() const { return flag_->load(); }
  // For engine code that polls a flag (eval::QuantReportOptions::cancel).
  const std::atomic<bool>* flag() const { return flag_.get(); }

 private:
  std::shared_ptr<std::atomic<bool>> flag_;
};

}  // namespace servescope::gui
