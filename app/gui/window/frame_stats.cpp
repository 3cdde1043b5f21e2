#include "app/gui/window/frame_stats.h"

#include <vector>

#include "engine/telemetry/metrics.h"

namespace servescope::gui {

void FrameStats::add(double frame_ms) {
  frames_ms_.push_back(frame_ms);
  while (frames_ms_.size() > window_) frames_ms_.pop_front();
}

double FrameStats::percentile(double p) const {
  const std::vector<double> values(frames_ms_.begin(), frames_ms_.end());
  return telemetry::percentile(values, p);
}

}  // namespace servescope::gui
