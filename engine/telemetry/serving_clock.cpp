#include "engine/telemetry/serving_clock.h"

#include <algorithm>
#include <utility>

namespace servescope::telemetry {

ServingClock::ServingClock(std::function<double()> source)
    : source_(std::move(source)), epoch_ms_(source_()) {}

double ServingClock::steady_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double ServingClock::now_ms() const { return to_serving_ms(source_()); }

double ServingClock::to_serving_ms(double source_ms) const {
  const double at = held_ ? std::min(source_ms, held_since_ms_) : source_ms;
  return at - epoch_ms_ - paused_ms_;
}

void ServingClock::hold() {
  if (held_) return;
  held_since_ms_ = source_();
  held_ = true;
}

void ServingClock::resume() {
  if (!held_) return;
  paused_ms_ += source_() - held_since_ms_;
  held_ = false;
}

double ServingClock::paused_ms() const {
  return paused_ms_ + (held_ ? source_() - held_since_ms_ : 0.0);
}

}  // namespace servescope::telemetry
