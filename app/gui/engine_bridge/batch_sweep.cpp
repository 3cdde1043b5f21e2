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

namespace {

// Runs in all: the untimed one, then every size in every pass.
constexpr int kSweepRuns = 1 + kBatchSweepSizes * kBatchSweepRepeats;

}  // namespace

int BatchSweepPlan::size_index(int run) const {
  if (run == 0) return 0;  // untimed first: the first run after loading pays for cold caches
  const int pass = (run - 1) / kBatchSweepSizes;
  const int i = (run - 1) % kBatchSweepSizes;
  return pass % 2 == 0 ? i : kBatchSweepSizes - 1 - i;
}

std::optional<int64_t> BatchSweepPlan::next_batch() const {
  if (runs_taken_ >= kSweepRuns) return std::nullopt;
  return int64_t{1} << size_index(runs_taken_);
}

std::optional<BatchSweepPoint> BatchSweepPlan::record(const telemetry::StepTotals& totals) {
  if (runs_taken_ >= kSweepRuns) return std::nullopt;
  const int run = runs_taken_++;
  if (run == 0) return std::nullopt;  // the untimed run measures nothing
  const int size = size_index(run);
  std::vector<telemetry::StepTotals>& runs = totals_[static_cast<size_t>(size)];
  runs.push_back(totals);
  if (runs.size() < static_cast<size_t>(kBatchSweepRepeats)) return std::nullopt;
  points_.push_back(*median_sweep_point(int64_t{1} << size, runs));
  return points_.back();
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
