#include "app/gui/measured_roofs.h"

namespace servescope::gui {

compute::MeasuredStep measured_step(const telemetry::StepRecord& step) {
  return {step.bytes_moved(), step.flops, step.wall_ms * 1e-3};
}

compute::StepRoofs roofs_under_steps(compute::StepRoofs probed,
                                     const std::deque<telemetry::StepRecord>& steps) {
  for (const telemetry::StepRecord& step : steps) {
    compute::raise_roofs_to_step(probed, measured_step(step));
  }
  return probed;
}

}  // namespace servescope::gui
