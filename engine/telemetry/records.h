// Plain records of what one engine step and one request did, and the figures derived from
// them. The GUI panels, the CLI and the benchmarks read these same records; the engine fills
// the raw fields (counts, bytes, timestamps) and never the derived ones.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace servescope::telemetry {

// Time per kernel class of one step, in milliseconds.
struct KernelTimes {
  double matmul_ms = 0.0;
  double attention_ms = 0.0;
  double norm_ms = 0.0;
  double other_ms = 0.0;

  double total_ms() const { return matmul_ms + attention_ms + norm_ms + other_ms; }
};

struct StepRecord {
  int64_t step_index = 0;
  int64_t prefill_tokens = 0;  // prompt tokens processed (chunked prefill included)
  int64_t decode_tokens = 0;   // one per decoding sequence
  int64_t sequences = 0;       // sequences in the batch
  int64_t max_batch_size = 0;  // batch slots the scheduler may fill
  KernelTimes kernel_times;
  uint64_t weight_bytes_read = 0;
  uint64_t kv_bytes_read = 0;
  uint64_t kv_bytes_written = 0;
  double flops = 0.0;
  int64_t kv_blocks_used = 0;
  int64_t kv_blocks_free = 0;
  double wall_ms = 0.0;  // the whole step, scheduling to sampled tokens

  int64_t tokens() const { return prefill_tokens + decode_tokens; }
  uint64_t bytes_moved() const { return weight_bytes_read + kv_bytes_read + kv_bytes_written; }
};

// Slots used / slots available: 0 when the batch has no slots.
double batch_occupancy(const StepRecord& step);
// Bytes moved and FLOPs over the step's wall time; 0 when no time was measured.
double achieved_gb_per_s(const StepRecord& step);
double achieved_gflop_per_s(const StepRecord& step);
// FLOPs per byte moved: the x-axis of the roofline; 0 when nothing was moved.
double arithmetic_intensity(const StepRecord& step);

// Timestamps in milliseconds on one steady clock (any epoch, the same for all fields).
struct RequestRecord {
  int64_t request_id = 0;
  int64_t prompt_tokens = 0;
  int64_t cached_prompt_tokens = 0;  // prompt tokens found in the prefix cache
  int64_t preemptions = 0;
  double arrival_ms = 0.0;             // submitted
  double first_scheduled_ms = 0.0;     // first step that processed any of its tokens
  std::vector<double> token_times_ms;  // when each output token was produced
};

// Definitions as serving engines use them (vLLM, TensorRT-LLM benchmarks):
//   queue time = first scheduled - arrival
//   TTFT       = first token - arrival            (queueing and prefill included)
//   latency    = last token - arrival             (end to end)
//   ITL        = gaps between consecutive output tokens
//   TPOT       = (latency - TTFT) / (output tokens - 1): mean time per token after the first
//   tokens/s   = output tokens / latency
// Each is 0 when the request has too few tokens for it to be defined.
int64_t output_tokens(const RequestRecord& request);
double queue_time_ms(const RequestRecord& request);
double time_to_first_token_ms(const RequestRecord& request);
double latency_ms(const RequestRecord& request);
std::vector<double> inter_token_latencies_ms(const RequestRecord& request);
double time_per_output_token_ms(const RequestRecord& request);
double tokens_per_s(const RequestRecord& request);

// The p-th percentile (0..100) with linear interpolation between closest ranks, as NumPy's
// default; 0 for an empty sample.
double percentile(std::span<const double> values, double p);

}  // namespace servescope::telemetry
