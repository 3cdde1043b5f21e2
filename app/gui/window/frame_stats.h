// Frame-time statistics for the debug overlay (F12): the interval between consecutive frame
// ticks of the GUI thread, which grows when anything (painting, folding telemetry, a slow
// slot) holds the GUI thread up.
#pragma once

#include <cstddef>
#include <deque>

namespace servescope::gui {

class FrameStats {
 public:
  explicit FrameStats(size_t window = 600) : window_(window) {}

  void add(double frame_ms);
  void clear() { frames_ms_.clear(); }
  size_t count() const { return frames_ms_.size(); }
  double p50() const { return percentile(50.0); }
  double p99() const { return percentile(99.0); }
  double percentile(double p) const;

 private:
  size_t window_;
  std::deque<double> frames_ms_;  // the most recent `window_` frames
};

}  // namespace servescope::gui
