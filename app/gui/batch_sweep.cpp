// The batch sweep's choice among one size's repeated runs (declared in engine_types.h).
#include <algorithm>
#include <vector>

#include "app/gui/engine_types.h"

namespace servescope::gui {

std::optional<BatchSweepPoint> median_sweep_point(int64_t max_batch,
                                                  std::span<const telemetry::StepTotals> runs) {
  if (runs.empty()) return std::nullopt;
  std::vector<telemetry::StepTotals> sorted(runs.begin(), runs.end());
  std::ranges::sort(sorted, {}, [](const telemetry::StepTotals& run) {
    return telemetry::mean_step_time_ms(run);
  });
  BatchSweepPoint point;
  point.max_batch = max_batch;
  point.decode = sorted[(sorted.size() - 1) / 2];
  point.fastest_step_ms = telemetry::mean_step_time_ms(sorted.front());
  point.slowest_step_ms = telemetry::mean_step_time_ms(sorted.back());
  return point;
}

}  // namespace servescope::gui
