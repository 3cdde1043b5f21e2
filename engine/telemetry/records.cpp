#include "engine/telemetry/records.h"

#include <algorithm>
#include <cmath>

namespace servescope::telemetry {

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kNone:
      return "none";
    case FinishReason::kMaxTokens:
      return "max_tokens";
    case FinishReason::kStopToken:
      return "stop_token";
    case FinishReason::kContextFull:
      return "context_full";
    case FinishReason::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

std::string_view sequence_phase_name(SequencePhase phase) {
  switch (phase) {
    case SequencePhase::kPrefill:
      return "prefill";
    case SequencePhase::kDecode:
      return "decode";
    case SequencePhase::kRecompute:
      return "recompute";
  }
  return "unknown";
}

std::string_view kernel_kind_name(KernelKind kind) {
  switch (kind) {
    case KernelKind::kMatmul:
      return "matmul";
    case KernelKind::kAttention:
      return "attention";
    case KernelKind::kNorm:
      return "norm";
    case KernelKind::kOther:
      return "other";
  }
  return "unknown";
}

double batch_occupancy(const StepRecord& step) {
  if (step.max_batch_size <= 0) return 0.0;
  return static_cast<double>(step.sequences) / static_cast<double>(step.max_batch_size);
}

double achieved_gb_per_s(const StepRecord& step) {
  if (step.wall_ms <= 0.0) return 0.0;
  return static_cast<double>(step.bytes_moved()) / (step.wall_ms * 1e-3) / 1e9;
}

double achieved_gflop_per_s(const StepRecord& step) {
  if (step.wall_ms <= 0.0) return 0.0;
  return step.flops / (step.wall_ms * 1e-3) / 1e9;
}

double arithmetic_intensity(const StepRecord& step) {
  const uint64_t bytes = step.bytes_moved();
  return bytes == 0 ? 0.0 : step.flops / static_cast<double>(bytes);
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
  return (latency_ms(request) - time_to_first_token_ms(request)) / static_cast<double>(n - 1);
}

double tokens_per_s(const RequestRecord& request) {
  const double latency = latency_ms(request);
  if (latency <= 0.0) return 0.0;
  return static_cast<double>(output_tokens(request)) / (latency * 1e-3);
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
