// The one definition of every figure ServeScope shows about serving: what it counts and over
// which interval, as functions over the engine's records. Panels, lesson measures, the CLI and
// the benchmarks compute their figures with these functions, and every tooltip that names a
// figure explains it with metric_definition(), so one quantity never has two values on screen.
//
// All times are on the engine's serving clock (Engine::now_ms()): the steady clock less the
// pauses the caller holds between steps (slow motion, single step), so a figure measured in
// slow motion is the figure measured at full speed.
//
// Definitions as serving engines use them (vLLM, TensorRT-LLM benchmarks):
//   step time   = the step's wall time, scheduling to sampled tokens (StepRecord::wall_ms)
//   throughput  = tokens / the summed step time of the steps that processed them
//   TTFT        = first token - arrival            (queueing and prefill included)
//   TPOT        = (last token - first token) / (output tokens - 1)
//   occupancy   = sequences in the batch / batch slots, per step; a mean is over the steps shown
//   bytes/step  = weight + KV bytes a step reads and writes (estimate_step_cost's model)
#pragma once

#include <cstdint>
#include <ranges>
#include <span>
#include <string_view>
#include <vector>

#include "engine/telemetry/records.h"

namespace servescope::telemetry {

enum class Metric { kThroughput, kStepTime, kTtft, kTpot, kOccupancy, kBytesPerStep };

// The name every screen uses: "throughput", "step time", "TTFT", "TPOT", "occupancy",
// "bytes per step".
std::string_view metric_name(Metric metric);
// One or two sentences: what it counts and over which interval (the tooltips' text).
std::string_view metric_definition(Metric metric);

// ---- One step ----

// The step's wall time in milliseconds: scheduling, the forward pass and sampling.
double step_time_ms(const StepRecord& step);
// Sequences in the batch / batch slots the scheduler may fill; 0 when the batch has no slots.
double batch_occupancy(const StepRecord& step);
// Weight bytes read + KV bytes read + KV bytes written by the step (the step cost model).
uint64_t bytes_per_step(const StepRecord& step);
// Bytes moved and FLOPs over the step time; 0 when no time was measured.
double achieved_gb_per_s(const StepRecord& step);
double achieved_gflop_per_s(const StepRecord& step);
// FLOPs per byte moved: the x-axis of the roofline; 0 when nothing was moved.
double arithmetic_intensity(const StepRecord& step);

// ---- A set of steps ----

// A decode step processed no prompt token: every sequence in it generated one token. A
// prefill step processed prompt tokens only. Mixed steps are neither, and neither is a cold
// step (StepRecord::cold: one-off costs of an engine that was not warmed, not its phase's speed).
bool is_decode_step(const StepRecord& step);
bool is_prefill_step(const StepRecord& step);

// The sums a throughput and a mean step time are made of, over one set of steps.
struct StepTotals {
  int64_t steps = 0;
  int64_t tokens = 0;    // prefill + decode tokens processed
  double step_ms = 0.0;  // summed step time
};

// Counts one more step in the totals.
void add_step(StepTotals& totals, const StepRecord& step);
// Over the steps of a range of StepRecords (a vector, a deque) that `counts` accepts: every
// step, the decode steps only (is_decode_step), or the prefill steps only.
template <std::ranges::input_range Steps, typename Predicate>
StepTotals step_totals_where(const Steps& steps, Predicate counts) {
  StepTotals totals;
  for (const StepRecord& step : steps) {
    if (counts(step)) add_step(totals, step);
  }
  return totals;
}
template <std::ranges::input_range Steps>
StepTotals step_totals(const Steps& steps) {
  return step_totals_where(steps, [](const StepRecord&) { return true; });
}
template <std::ranges::input_range Steps>
StepTotals decode_step_totals(const Steps& steps) {
  return step_totals_where(steps, is_decode_step);
}
template <std::ranges::input_range Steps>
StepTotals prefill_step_totals(const Steps& steps) {
  return step_totals_where(steps, is_prefill_step);
}
// The index of the first step after the last idle gap longer than `gap_ms` (the engine waited
// that long between two steps), 0 when there was none: where the current run of work began, so
// a chart of it is not a sliver at the end of a whole session.
template <std::ranges::random_access_range Steps>
size_t first_step_after_idle(const Steps& steps, double gap_ms) {
  for (size_t i = std::ranges::size(steps); i > 1; --i) {
    const StepRecord& before = steps[i - 2];
    const StepRecord& after = steps[i - 1];
    if (after.start_ms - before.end_ms > gap_ms) return i - 1;
  }
  return 0;
}
// tokens / (step_ms / 1000); 0 when no time was measured.
double throughput_tokens_per_s(const StepTotals& totals);
// step_ms / steps; 0 for no steps.
double mean_step_time_ms(const StepTotals& totals);
// The mean of per-step occupancies; 0 for none. The headline over a chart is this mean over
// exactly the steps the chart draws.
double mean_occupancy(std::span<const double> per_step);

// ---- One request ----

int64_t output_tokens(const RequestRecord& request);
// first scheduled - arrival.
double queue_time_ms(const RequestRecord& request);
// first token - arrival; 0 before the first token.
double time_to_first_token_ms(const RequestRecord& request);
// last token - arrival; 0 before the first token.
double latency_ms(const RequestRecord& request);
// The gaps between consecutive output tokens.
std::vector<double> inter_token_latencies_ms(const RequestRecord& request);
// (last token - first token) / (output tokens - 1); 0 below two tokens.
double time_per_output_token_ms(const RequestRecord& request);
// output tokens / latency.
double tokens_per_s(const RequestRecord& request);

// A request's TPOT split into the steps it rode and the time between them:
//   tpot_ms = mean_step_ms + gap_ms
// mean_step_ms is the mean step time of the decode steps that generated its tokens after the
// first (found in `steps` by their batch entries; other requests' prefill chunks in the same
// step included); gap_ms is the rest, per token: time the engine spent outside steps between
// them (the window's event loop, bookkeeping after the token's time stamp).
struct TpotBreakdown {
  double tpot_ms = 0.0;
  int64_t steps = 0;  // decode steps of the request found in `steps`
  double mean_step_ms = 0.0;
  double gap_ms = 0.0;
};
// Whether `step` made one of the request's tokens after its first (it started after the first
// token was stamped, by the last, and sampled for the request).
bool made_later_token(const RequestRecord& request, const StepRecord& step);
// steps == 0 when the request has fewer than two tokens or none of its decode steps is in
// `steps` (they left a bounded history); then only tpot_ms is set.
TpotBreakdown tpot_breakdown(const RequestRecord& request, const StepTotals& rode);
template <std::ranges::input_range Steps>
TpotBreakdown tpot_breakdown(const RequestRecord& request, const Steps& steps) {
  StepTotals rode;
  for (const StepRecord& step : steps) {
    if (made_later_token(request, step)) add_step(rode, step);
  }
  return tpot_breakdown(request, rode);
}

// The p-th percentile (0..100) with linear interpolation between closest ranks, as NumPy's
// default; 0 for an empty sample.
double percentile(std::span<const double> values, double p);

}  // namespace servescope::telemetry
