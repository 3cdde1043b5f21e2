#include "engine/telemetry/metrics.h"

#include <algorithm>
#include <cmath>

namespace servescope::telemetry {

std::string_view metric_name(Metric metric) {
  switch (metric) {
    case Metric::kThroughput:
      return "throughput";
    case Metric::kStepTime:
      return "step time";
    case Metric::kTtft:
      return "TTFT";
    case Metric::kTpot:
      return "TPOT";
    case Metric::kOccupancy:
      return "occupancy";
    case Metric::kBytesPerStep:
      return "bytes per step";
  }
  return "unknown";
}

std::string_view metric_definition(Metric metric) {
  switch (metric) {
    case Metric::kThroughput:
      return "Throughput: tokens processed divided by the summed step time of the steps that "
             "processed them (time between steps left out).";
    case Metric::kStepTime:
      return "Step time: the wall time of one engine step, from choosing the batch to the "
             "sampled tokens; every sequence in the batch waits it.";
    case Metric::kTtft:
      return "TTFT (time to first token): from submitting the request to its first generated "
             "token, queueing and prefill included.";
    case Metric::kTpot:
      return "TPOT (time per output token): (last token time - first token time) / (output "
             "tokens - 1), the mean time between its tokens after the first: the step time of "
             "the steps it rode plus the gaps between them.";
    case Metric::kOccupancy:
      return "Occupancy: sequences in a step's batch / the batch's slots; a mean is over the "
             "steps shown.";
    case Metric::kBytesPerStep:
      return "Bytes per step: weight bytes read + KV-cache bytes read and written by one step, "
             "from the model's shape and the batch (an estimate, not a counter).";
  }
  return "";
}

double step_time_ms(const StepRecord& step) { return step.wall_ms; }

double batch_occupancy(const StepRecord& step) {
  if (step.max_batch_size <= 0) return 0.0;
  return static_cast<double>(step.sequences) / static_cast<double>(step.max_batch_size);
}

uint64_t bytes_per_step(const StepRecord& step) { return step.bytes_moved(); }

double achieved_gb_per_s(const StepRecord& step) {
  if (step_time_ms(step) <= 0.0) return 0.0;
  return static_cast<double>(bytes_per_step(step)) / (step_time_ms(step) * 1e-3) / 1e9;
}

double achieved_gflop_per_s(const StepRecord& step) {
  if (step_time_ms(step) <= 0.0) return 0.0;
  return step.flops / (step_time_ms(step) * 1e-3) / 1e9;
}

double arithmetic_intensity(const StepRecord& step) {
  const uint64_t bytes = bytes_per_step(step);
  return bytes == 0 ? 0.0 : step.flops / static_cast<double>(bytes);
}

bool is_decode_step(const StepRecord& step) {
  return !step.cold && step.prefill_tokens == 0 && step.decode_tokens > 0;
}

bool is_prefill_step(const StepRecord& step) {
  return !step.cold && step.prefill_tokens > 0 && step.decode_tokens == 0;
}

void add_step(StepTotals& totals, const StepRecord& step) {
  ++totals.steps;
  totals.tokens += step.tokens();
  totals.step_ms += step_time_ms(step);
}

double throughput_tokens_per_s(const StepTotals& totals) {
  if (totals.step_ms <= 0.0) return 0.0;
  return static_cast<double>(totals.tokens) / (totals.step_ms / 1000.0);
}

double mean_step_time_ms(const StepTotals& totals) {
  return totals.steps > 0 ? totals.step_ms / static_cast<double>(totals.steps) : 0.0;
}

double mean_occupancy(std::span<const double> per_step) {
  if (per_step.empty()) return 0.0;
  double sum = 0.0;
  for (const double v : per_step) sum += v;
  return sum / static_cast<double>(per_step.size());
}

int64_t output_tokens(const RequestRecord& request) {
  return static_cast<int64_t>(request.token_times_ms.size());
}

double queue_time_ms(const RequestRecord& request) {
  return request.first_scheduled_ms - request.arrival_ms;
}

double time_to_first_token_ms(const RequestRecord& request) {
  if (request.token_times_ms.empty()) return 0.0;
  return request.token_times_ms.front() - request.arrival_ms;
}

double latency_ms(const RequestRecord& request) {
  if (request.token_times_ms.empty()) return 0.0;
  return request.token_times_ms.back() - request.arrival_ms;
}

std::vector<double> inter_token_latencies_ms(const RequestRecord& request) {
  std::vector<double> gaps;
  const std::vector<double>& t = request.token_times_ms;
  for (size_t i = 1; i < t.size(); ++i) gaps.push_back(t[i] - t[i - 1]);
  return gaps;
}

double time_per_output_token_ms(const RequestRecord& request) {
  const int64_t n = output_tokens(request);
  if (n < 2) return 0.0;
  return (request.token_times_ms.back() - request.token_times_ms.front()) /
         static_cast<double>(n - 1);
}

double tokens_per_s(const RequestRecord& request) {
  const double latency = latency_ms(request);
  if (latency <= 0.0) return 0.0;
  return static_cast<double>(output_tokens(request)) / (latency * 1e-3);
}

bool made_later_token(const RequestRecord& request, const StepRecord& step) {
  if (output_tokens(request) < 2) return false;
  // The steps that made its later tokens started after the first one was stamped.
  if (step.start_ms <= request.token_times_ms.front()) return false;
  if (step.start_ms > request.token_times_ms.back()) return false;
  return std::ranges::any_of(step.batch, [&request](const BatchEntry& e) {
    return e.sequence == request.request_id && e.sampled_token >= 0;
  });
}

TpotBreakdown tpot_breakdown(const RequestRecord& request, const StepTotals& rode) {
  TpotBreakdown out;
  out.tpot_ms = time_per_output_token_ms(request);
  if (output_tokens(request) < 2 || rode.steps == 0) return out;
  out.steps = rode.steps;
  out.mean_step_ms = mean_step_time_ms(rode);
  out.gap_ms = out.tpot_ms - out.mean_step_ms;
  return out;
}

double percentile(std::span<const double> values, double p) {
  if (values.empty()) return 0.0;
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = rank - static_cast<double>(below);
  return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}

}  // namespace servescope::telemetry
