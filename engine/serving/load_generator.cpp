#include "engine/serving/load_generator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

#include "engine/core/error.h"
#include "engine/telemetry/metrics.h"

namespace servescope::serving {
namespace {

// Draws from the 64-bit Mersenne Twister with our own arithmetic (the standard distributions
// differ between standard libraries), so a seed names the same workload everywhere.
class WorkloadRandom {
 public:
  explicit WorkloadRandom(uint64_t seed) : rng_(seed) {}

  double uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }  // [0, 1)
  int64_t integer(int64_t min, int64_t max) {                                 // [min, max]
    const auto span = static_cast<uint64_t>(max - min) + 1;
    return min + static_cast<int64_t>(rng_() % span);
  }
  // Gap between Poisson arrivals: exponential with mean 1 / rate.
  double exponential(double rate) { return -std::log(1.0 - uniform()) / rate; }

 private:
  std::mt19937_64 rng_;
};

void check_range(const LengthRange& range, const std::string& what) {
  if (range.min < 1 || range.max < range.min) {
    throw InputError(what + " lengths need 1 <= min <= max (got " + std::to_string(range.min) +
                     ":" + std::to_string(range.max) + ")");
  }
}

std::vector<int32_t> draw_prompt(const WorkloadSpec& spec, int64_t length, WorkloadRandom& random) {
  std::vector<int32_t> prompt;
  if (spec.text_ids.empty()) {
    for (int64_t i = 0; i < length; ++i) {
      prompt.push_back(static_cast<int32_t>(random.integer(0, spec.vocab_size - 1)));
    }
    return prompt;
  }
  // A window at a random offset; a text shorter than the prompt is read round and round.
  const auto text = static_cast<int64_t>(spec.text_ids.size());
  const int64_t start = random.integer(0, std::max<int64_t>(0, text - length));
  for (int64_t i = 0; i < length; ++i) {
    prompt.push_back(spec.text_ids[static_cast<size_t>((start + i) % text)]);
  }
  return prompt;
}

// Collects the engine's records for the summary.
class RecordCollector final : public telemetry::Observer {
 public:
  void on_step(const telemetry::StepRecord& step) override { steps.push_back(step); }
  void on_request(const telemetry::RequestRecord& request) override { requests.push_back(request); }
  void on_kv_event(const telemetry::KvEvent& /*event*/) override {}

  std::vector<telemetry::StepRecord> steps;
  std::vector<telemetry::RequestRecord> requests;
};

}  // namespace

std::vector<SimulatedRequest> make_workload(const WorkloadSpec& spec) {
  if (spec.clients < 1) throw InputError("the workload needs at least one client");
  if (!(spec.rate_per_s >= 0.0)) {
    throw InputError("the arrival rate must be 0 (all at once) or more");
  }
  check_range(spec.prompt_tokens, "prompt");
  check_range(spec.output_tokens, "output");
  if (spec.text_ids.empty() && spec.vocab_size < 1) {
    throw InputError("the workload needs a text or a vocabulary to draw prompts from");
  }
  const bool all_at_once = spec.rate_per_s == 0.0 || std::isinf(spec.rate_per_s);
  WorkloadRandom random(spec.seed);
  std::vector<SimulatedRequest> requests;
  double arrival_ms = 0.0;
  for (int64_t i = 0; i < spec.clients; ++i) {
    // The first request opens the run at t = 0; the others follow at exponential gaps.
    if (!all_at_once && i > 0) arrival_ms += 1000.0 * random.exponential(spec.rate_per_s);
    SimulatedRequest r;
    r.arrival_ms = arrival_ms;
    const int64_t prompt_length = random.integer(spec.prompt_tokens.min, spec.prompt_tokens.max);
    r.max_tokens = random.integer(spec.output_tokens.min, spec.output_tokens.max);
    r.prompt_ids = draw_prompt(spec, prompt_length, random);
    requests.push_back(std::move(r));
  }
  return requests;
}

Percentiles percentiles(std::span<const double> values) {
  return {telemetry::percentile(values, 50.0), telemetry::percentile(values, 90.0),
          telemetry::percentile(values, 99.0)};
}

LoadSummary summarize_load(std::span<const telemetry::StepRecord> steps,
                           std::span<const telemetry::RequestRecord> requests, double wall_ms,
                           uint64_t bytes_per_block) {
  LoadSummary s;
  s.requests = static_cast<int64_t>(requests.size());
  s.wall_s = wall_ms / 1000.0;
  std::vector<double> ttft;
  std::vector<double> tpot;
  for (const telemetry::RequestRecord& r : requests) {
    s.prompt_tokens += r.prompt_tokens;
    s.output_tokens += telemetry::output_tokens(r);
    s.preemptions += r.preemptions;
    if (telemetry::output_tokens(r) >= 1) ttft.push_back(telemetry::time_to_first_token_ms(r));
    if (telemetry::output_tokens(r) >= 2) tpot.push_back(telemetry::time_per_output_token_ms(r));
  }
  s.ttft_ms = percentiles(ttft);
  s.tpot_ms = percentiles(tpot);
  if (s.wall_s > 0.0) {
    s.output_tokens_per_s = static_cast<double>(s.output_tokens) / s.wall_s;
    s.prompt_tokens_per_s = static_cast<double>(s.prompt_tokens) / s.wall_s;
  }

  s.steps = static_cast<int64_t>(steps.size());
  double occupancy = 0.0;
  double step_ms = 0.0;
  double bytes = 0.0;
  double flops = 0.0;
  for (const telemetry::StepRecord& step : steps) {
    occupancy += telemetry::batch_occupancy(step);
    step_ms += step.wall_ms;
    bytes += static_cast<double>(step.bytes_moved());
    flops += step.flops;
    s.mean_kernel_ms.matmul_ms += step.kernel_times.matmul_ms;
    s.mean_kernel_ms.attention_ms += step.kernel_times.attention_ms;
    s.mean_kernel_ms.norm_ms += step.kernel_times.norm_ms;
    s.mean_kernel_ms.other_ms += step.kernel_times.other_ms;
    s.kv_peak_blocks = std::max(s.kv_peak_blocks, step.kv_blocks_used);
  }
  s.kv_peak_bytes = static_cast<uint64_t>(s.kv_peak_blocks) * bytes_per_block;
  s.kernel_times_measured =
      !steps.empty() && std::ranges::all_of(steps, [](const telemetry::StepRecord& step) {
        return step.kernel_times_measured;
      });
  if (!steps.empty()) {
    s.mean_batch_occupancy = occupancy / static_cast<double>(steps.size());
    const auto n = static_cast<double>(steps.size());
    s.mean_step_ms = step_ms / n;
    for (double* ms : {&s.mean_kernel_ms.matmul_ms, &s.mean_kernel_ms.attention_ms,
                       &s.mean_kernel_ms.norm_ms, &s.mean_kernel_ms.other_ms}) {
      *ms /= n;
    }
  }
  const telemetry::StepTotals decode = telemetry::decode_step_totals(steps);
  s.decode_only_steps = decode.steps;
  s.mean_decode_step_ms = telemetry::mean_step_time_ms(decode);
  s.decode_tokens_per_s = telemetry::throughput_tokens_per_s(decode);
  s.busy_s = step_ms / 1000.0;
  if (step_ms > 0.0) {
    s.achieved_gb_per_s = bytes / (step_ms * 1e-3) / 1e9;
    s.achieved_gflop_per_s = flops / (step_ms * 1e-3) / 1e9;
  }
  return s;
}

struct LoadRun::State {
  State(model::Transformer& transformer, uint64_t weight_bytes, const EngineConfig& config,
        std::vector<SimulatedRequest> load)
      : requests(std::move(load)), engine(transformer, weight_bytes, config, &collector) {}

  std::vector<SimulatedRequest> requests;
  RecordCollector collector;  // before the engine, which reports to it
  Engine engine;
  double start_ms = engine.now_ms();
  size_t next = 0;  // the first request not yet submitted
};

LoadRun::LoadRun(model::Transformer& transformer, uint64_t weight_bytes, const EngineConfig& config,
                 std::vector<SimulatedRequest> requests)
    : state_(std::make_unique<State>(transformer, weight_bytes, config, std::move(requests))) {}

LoadRun::~LoadRun() = default;

LoadRun::Turn LoadRun::advance() {
  State& s = *state_;
  if (s.next >= s.requests.size() && !s.engine.has_unfinished()) return Turn{.done = true};
  const double now_ms = s.engine.now_ms() - s.start_ms;
  for (; s.next < s.requests.size() && s.requests[s.next].arrival_ms <= now_ms; ++s.next) {
    const SimulatedRequest& r = s.requests[s.next];
    EngineRequest request;
    request.prompt_ids = r.prompt_ids;
    request.max_tokens = r.max_tokens;
    s.engine.submit(request, s.start_ms + r.arrival_ms);
  }
  if (s.engine.step()) return Turn{.stepped = true};
  // Idle, or a static batch collecting: nothing until the next arrival or the batch is due,
  // whichever comes first.
  double wake_ms = s.next < s.requests.size() ? s.start_ms + s.requests[s.next].arrival_ms
                                              : std::numeric_limits<double>::infinity();
  if (const std::optional<double> due = s.engine.batch_due_ms()) wake_ms = std::min(wake_ms, *due);
  if (!std::isfinite(wake_ms)) {
    if (s.engine.has_unfinished()) throw std::logic_error("LoadRun: the engine cannot step");
    return Turn{.done = true};
  }
  return Turn{.wait_ms = std::max(0.0, wake_ms - s.engine.now_ms())};
}

int64_t LoadRun::finished() const {
  return static_cast<int64_t>(state_->collector.requests.size());
}

int64_t LoadRun::total() const { return static_cast<int64_t>(state_->requests.size()); }

LoadResult LoadRun::take_result() {
  State& s = *state_;
  LoadResult result;
  result.summary =
      summarize_load(s.collector.steps, s.collector.requests, s.engine.now_ms() - s.start_ms,
                     kv_bytes_per_block(s.engine.pool().layout()));
  result.steps = std::move(s.collector.steps);
  result.requests = std::move(s.collector.requests);
  return result;
}

LoadResult run_load(model::Transformer& transformer, uint64_t weight_bytes,
                    const EngineConfig& config, std::span<const SimulatedRequest> requests,
                    const LoadProgress& progress, const std::function<bool()>& should_stop) {
  LoadRun run(transformer, weight_bytes, config, {requests.begin(), requests.end()});
  while (!(should_stop && should_stop())) {
    const LoadRun::Turn turn = run.advance();
    if (turn.done) break;
    if (turn.stepped) {
      if (progress) progress(run.finished(), run.total());
      continue;
    }
    // In slices of at most 100 ms, so that a stop request is answered while waiting.
    std::this_thread::sleep_for(
        std::chrono::duration<double, std::milli>(std::min(turn.wait_ms, 100.0)));
  }
  return run.take_result();
}

}  // namespace servescope::serving
