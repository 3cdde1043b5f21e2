#include "app/gui/engine_bridge/measured_roofs.h"

namespace servescope::gui {

compute::MeasuredStep measured_step(const telemetry::StepRecord& step) {
  return {step.bytes_moved(), step.flops, step.wall_ms * 1e-3};
}

compute::StepRoofs roofs_under_steps(compute::StepRoofs probed,
                                     const std::deque<telemetry::StepRecord>& steps) {
  compute::StepRoofs roofs = probed;
  for (const telemetry::StepRecord& step : steps) {
    compute::raise_roofs_to_step(roofs, measured_step(step));
  }
  const auto said = [](double now, double before, std::string& raised_by) {
    if (now > before) raised_by = kRaisedThisRun;
  };
  said(roofs.cache_gb_per_s, probed.cache_gb_per_s, roofs.cache_raised_by);
  said(roofs.memory_gb_per_s, probed.memory_gb_per_s, roofs.memory_raised_by);
  said(roofs.compute_gflop_per_s, probed.compute_gflop_per_s, roofs.compute_raised_by);
  return roofs;
}

}  // namespace servescope::gui
