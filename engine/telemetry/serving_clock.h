// The engine's clock: milliseconds of steady time since it started, less the pauses its owner
// holds between steps. The window's slow motion and single step hold it while they wait, so
// every time stamped on the records (arrivals, steps, tokens) is serving time: TTFT and TPOT in
// slow motion are those of the same work at full speed, and the pause itself is reported apart
// (paused_ms).
#pragma once

#include <chrono>
#include <functional>

namespace servescope::telemetry {

class ServingClock {
 public:
  // source: milliseconds on a steady clock (any epoch); the default reads
  // std::chrono::steady_clock. Tests pass their own.
  explicit ServingClock(std::function<double()> source = steady_ms);

  // Serving time since construction: steady time less every pause.
  double now_ms() const;
  // Holds the clock still from now until resume(); a second hold() while held is a no-op.
  void hold();
  void resume();
  bool held() const { return held_; }
  // Steady time spent held, completed pauses and the current one.
  double paused_ms() const;
  // A time on the source's clock (a kernel span's stamp), as serving time. Meant for times
  // taken while the clock runs: one taken during a pause maps to the pause's start.
  double to_serving_ms(double source_ms) const;

  static double steady_ms();

 private:
  std::function<double()> source_;
  double epoch_ms_;
  double paused_ms_ = 0.0;  // completed pauses
  double held_since_ms_ = 0.0;
  bool held_ = false;
};

}  // namespace servescope::telemetry
