// The one set of roofs every panel, lesson measure and question judges steps against: the
// device probe's (EngineInfo::roofs), raised by every measured step that beat them. The engine
// worker keeps the raises it sees in the probe's cache (compute::persist_raised_roofs).
#pragma once

#include <deque>

#include "engine/compute/roofs.h"
#include "engine/telemetry/records.h"

namespace servescope::gui {

// What a step moved and did in its measured wall time (telemetry's bytes, FLOPs and wall_ms,
// the same figures the roofline plots).
compute::MeasuredStep measured_step(const telemetry::StepRecord& step);

// What a roof raised by one of the window's own steps says raised it.
inline constexpr const char* kRaisedThisRun = "a step of this run";

// `probed` raised by every step of `steps` that beat it (the raised ones say kRaisedThisRun).
compute::StepRoofs roofs_under_steps(compute::StepRoofs probed,
                                     const std::deque<telemetry::StepRecord>& steps);

}  // namespace servescope::gui
