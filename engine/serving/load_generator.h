// Simulated clients for benchmarking the engine: a seeded workload (when each request arrives,
// its prompt, how many tokens it asks for), a driver that replays it against an Engine on the
// wall clock, and the summary a benchmark prints (throughput, TTFT and TPOT percentiles, batch
// occupancy, KV peak, preemptions, achieved bandwidth and compute).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/serving/engine.h"
#include "engine/telemetry/records.h"

namespace servescope::serving {

// Lengths drawn uniformly from [min, max].
struct LengthRange {
  int64_t min = 1;
  int64_t max = 1;
};

struct WorkloadSpec {
  int64_t clients = 8;    // requests, one per simulated client
  double rate_per_s = 0;  // Poisson arrivals at this mean rate; 0 or infinity: all at t = 0
  LengthRange prompt_tokens{32, 64};
  LengthRange output_tokens{32, 64};
  uint64_t seed = 0;
  // Prompts are windows of this text at random offsets; when empty, random ids below vocab_size.
  std::vector<int32_t> text_ids;
  int32_t vocab_size = 0;
};

struct SimulatedRequest {
  double arrival_ms = 0.0;  // after the start of the run
  std::vector<int32_t> prompt_ids;
  int64_t max_tokens = 0;
};

// The requests in arrival order; the same spec gives the same requests on every machine.
// InputError for fewer than one client, a negative rate, an empty or non-positive length range,
// or neither a text nor a vocabulary to draw prompts from.
std::vector<SimulatedRequest> make_workload(const WorkloadSpec& spec);

struct Percentiles {
  double p50 = 0.0;
  double p90 = 0.0;
  double p99 = 0.0;
};

Percentiles percentiles(std::span<const double> values);

struct LoadSummary {
  int64_t requests = 0;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  double wall_s = 0.0;               // first arrival to last token
  double output_tokens_per_s = 0.0;  // the throughput: output tokens / wall
  double prompt_tokens_per_s = 0.0;
  Percentiles ttft_ms;
  Percentiles tpot_ms;  // requests with at least two output tokens
  double mean_batch_occupancy = 0.0;
  int64_t kv_peak_blocks = 0;
  uint64_t kv_peak_bytes = 0;
  int64_t preemptions = 0;
  int64_t steps = 0;
  double busy_s = 0.0;  // inside engine steps; wall_s - busy_s: idle or collecting a batch
  double mean_step_ms = 0.0;
  int64_t decode_only_steps = 0;     // steps without prefill tokens
  double mean_decode_step_ms = 0.0;  // their mean: the time of one batched decode
  // Their tokens over their time: decode throughput alone, without the prompts' prefill, the
  // part of serving that batching shares the weight reads of.
  double decode_tokens_per_s = 0.0;
  telemetry::KernelTimes mean_kernel_ms;  // per step; zeros where the backend does not time
  bool kernel_times_measured = false;     // every step's were; false: mean_kernel_ms is no figure
  // Over all steps: estimated bytes moved and FLOPs over the time spent in steps (the
  // time-weighted mean of the per-step figures).
  double achieved_gb_per_s = 0.0;
  double achieved_gflop_per_s = 0.0;
};

// bytes_per_block: the KV pool's, to turn the peak block count into bytes.
LoadSummary summarize_load(std::span<const telemetry::StepRecord> steps,
                           std::span<const telemetry::RequestRecord> requests, double wall_ms,
                           uint64_t bytes_per_block);

struct LoadResult {
  LoadSummary summary;
  std::vector<telemetry::StepRecord> steps;
  std::vector<telemetry::RequestRecord> requests;  // in finishing order
};

// Called after every step with the requests finished so far and the total.
using LoadProgress = std::function<void(int64_t finished, int64_t total)>;

// A load replayed on a fresh Engine one step at a time, for a caller with a loop of its own
// (the window's engine thread answers commands between steps); run_load drives one to its end.
// Each advance() first submits every request whose arrival time has come (its arrival
// recorded as the time it was due). Requests decode greedily and ignore the stop token, so
// each produces exactly its max_tokens (or fills the context). A request the engine refuses
// (Engine::submit's InputError) throws from advance().
class LoadRun {
 public:
  // What one advance() did: ran a step, found the load done, or found nothing to do for
  // `wait_ms` (until the next arrival, or until a collecting static batch is due).
  struct Turn {
    bool stepped = false;
    bool done = false;
    double wait_ms = 0.0;
  };

  // `requests` in arrival order; the load's clock starts now.
  LoadRun(model::Transformer& transformer, uint64_t weight_bytes, const EngineConfig& config,
          std::vector<SimulatedRequest> requests);
  ~LoadRun();
  LoadRun(const LoadRun&) = delete;
  LoadRun& operator=(const LoadRun&) = delete;

  Turn advance();
  int64_t finished() const;  // requests finished so far
  int64_t total() const;
  // What finished so far, summarised now (the whole load once advance() said done), its
  // records moved out: the last call on a run.
  LoadResult take_result();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Replays `requests` (in arrival order) on a fresh Engine: between steps, every request whose
// arrival time has come is submitted (its arrival recorded as the time it was due); when
// nothing runs (or a static batch is collecting), the driver sleeps until the next arrival or
// the batch is due. Requests decode greedily and ignore
// the stop token, so each produces exactly its max_tokens (or fills the context). A request the
// engine refuses (Engine::submit's InputError) ends the run with that error. When
// `should_stop` answers true (asked between steps, and at least every 100 ms while waiting),
// the run ends after the current step and the result covers what finished by then.
LoadResult run_load(model::Transformer& transformer, uint64_t weight_bytes,
                    const EngineConfig& config, std::span<const SimulatedRequest> requests,
                    const LoadProgress& progress = {},
                    const std::function<bool()>& should_stop = {});

}  // namespace servescope::serving
