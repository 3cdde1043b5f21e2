// The batch sweep's workload and its choice among one size's repeated runs (declared in
// engine_types.h).
#include <algorithm>
#include <utility>
#include <vector>

#include "app/gui/engine_bridge/engine_types.h"

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

serving::WorkloadSpec batch_sweep_workload(int64_t max_batch, std::vector<int32_t> text_ids,
                                           int32_t vocab_size) {
  serving::WorkloadSpec spec;
  spec.clients = 2 * max_batch;
  spec.prompt_tokens = {16, 32};
  spec.output_tokens = {32, 32};
  spec.seed = 7;
  spec.text_ids = std::move(text_ids);
  spec.vocab_size = vocab_size;
  return spec;
}

QString batch_sweep_workload_text() {
  const serving::WorkloadSpec spec = batch_sweep_workload(1, {}, 0);
  const auto range = [](const serving::LengthRange& r) {
    return r.min == r.max ? QString::number(r.min) : QStringLiteral("%1-%2").arg(r.min).arg(r.max);
  };
  return QStringLiteral(
             "%1 requests per slot, prompts of %2 tokens, up to %3 output tokens each, greedy, on "
             "a "
             "fresh engine after one untimed run")
      .arg(spec.clients)
      .arg(range(spec.prompt_tokens), range(spec.output_tokens));
}

}  // namespace servescope::gui
