// The plain values that cross between the GUI thread and the engine's thread in queued
// signals: what to load, how to sample, what the engine reports back.
#pragma once

#include <QMetaType>
#include <QString>
#include <QVector>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "app/gui/engine_bridge/attention_mailbox.h"
#include "engine/compute/backend.h"
#include "engine/compute/roofs.h"
#include "engine/serving/kv_block_pool.h"
#include "engine/serving/load_generator.h"
#include "engine/serving/sampler.h"
#include "engine/telemetry/kv_event.h"
#include "engine/telemetry/metrics.h"
#include "engine/telemetry/observer.h"
#include "engine/tokenizer/tokenizer.h"

namespace servescope::gui {

// The window's backend is the engine's own choice (its threads left at 0: the physical cores).
// The window's device picker, its settings and a lesson's saved engine hold the Vulkan device
// as an int, -1 for the best one; backend_choice_of and device_index convert to and from it.
using compute::BackendChoice;
inline BackendChoice backend_choice_of(compute::BackendKind kind, int device = -1,
                                       bool quantised_activations = false) {
  BackendChoice choice(
      kind, device >= 0 ? std::optional<uint32_t>(static_cast<uint32_t>(device)) : std::nullopt);
  choice.quantised_activations = quantised_activations;
  return choice;
}
inline int device_index(const BackendChoice& choice) {
  return choice.device ? static_cast<int>(*choice.device) : -1;
}

// How the engine forms batches (serving::BatchingPolicy) and, for static batching, how long
// the oldest waiting request may wait for the batch to fill.
struct BatchingChoice {
  bool static_batches = false;
  int wait_ms = 0;
};

// A static batch being collected, as the engine reports it: `waiting` requests of
// `batch_size` places; it runs `due_in_ms` after the report at the latest (earlier when it
// fills). waiting == 0: nothing is collecting.
struct BatchCollecting {
  int waiting = 0;
  int batch_size = 0;
  double due_in_ms = 0.0;
};

// How fast the engine's thread runs steps while there is work.
enum class Speed {
  kRealTime,    // one step per event-loop turn
  kSlowMotion,  // one step every kSlowMotionMs, so each can be watched
  kSingleStep,  // only when asked (Step)
};

// The engine as built: what the status bar, the folder and the prompt chips need.
// Device memory by purpose, from the backend's accounting (0: not reported by the backend).
struct MeasuredMemory {
  uint64_t weights_bytes = 0;
  uint64_t kv_bytes = 0;
  uint64_t working_bytes = 0;
};

struct EngineInfo {
  QString model_path;
  QString model_name;
  QString weight_type;  // "" for the file's own weights, else what they were re-encoded to
  QString architecture;
  // Where the model comes from, one "Label: value" line per general.* key the file has
  // (author, licence, URLs, chat template), for the model's tooltip.
  QString provenance;
  QString backend;                     // "cpu" or "vulkan"
  QString device;                      // device name (Vulkan) or the CPU
  QString driver;                      // driver version (Vulkan), empty on the CPU
  bool quantised_activations = false;  // the CPU backend's 8-bit activations are on
  int vulkan_device = -1;
  bool random_weights = false;  // a timing model: its text is meaningless
  int64_t parameters = 0;
  uint64_t weight_bytes = 0;
  int64_t context_length = 0;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t vocab_size = 0;
  int64_t ffn_dim = 0;
  QString tensor_types;  // "F32 11, Q4_K 29, Q6_K 3": tensors per type (summarize_weights)
  gguf::GgmlType kv_type = gguf::GgmlType::F16;
  int64_t kv_blocks = 0;
  int64_t block_size = 0;
  uint64_t kv_bytes_per_block = 0;
  uint64_t kv_bytes_per_token = 0;
  uint64_t kv_bytes_total = 0;
  int64_t max_batch_size = 0;
  // The untimed kernel warm-up this engine ran before its first step (serving/warm_up.h).
  double warm_up_ms = 0.0;
  BatchingChoice batching;  // as the engine's scheduler held it when made
  // false: the engine serves without a KV cache (every token recomputes its context).
  bool keep_kv = true;
  // Device memory by purpose when the engine was made, from the backend's accounting (0: not
  // reported by the backend); later measurements come as MeasuredMemory (EngineState).
  uint64_t memory_weights_bytes = 0;
  uint64_t memory_kv_bytes = 0;
  uint64_t memory_working_bytes = 0;
  // The device's roofs as probed (0: not measured): read bandwidth within and beyond the last
  // level cache, and matrix-multiply GFLOP/s in the model's main weight type; steps are judged
  // against these raised by the steps that beat them (roofs_under_steps).
  compute::StepRoofs roofs;
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  // Immutable after loading, so the GUI thread may tokenise with it while the engine runs.
  std::shared_ptr<const Tokenizer> tokenizer;
  // This engine's records; a new engine gets a new queue, so records never mix.
  std::shared_ptr<telemetry::TelemetryQueue> telemetry;
  std::shared_ptr<AttentionMailbox> attention;
};

// One token of the user's generation, with its probability when the engine reports it.
struct GeneratedToken {
  int32_t id = 0;
  QString text;  // the bytes it adds to the text, as UTF-8 (may be part of a character)
  double probability = -1.0;                     // < 0: not reported
  QVector<QPair<QString, double>> alternatives;  // most likely first
};

// The engine's own counters, sent when it falls idle (for the status bar and tests).
struct EngineCounters {
  int64_t steps_run = 0;
  int64_t requests_submitted = 0;
  int64_t requests_finished = 0;
  int64_t kv_blocks_used = 0;
  int64_t kv_blocks_total = 0;
  telemetry::KvSnapshot kv;  // the whole block table state, as the engine holds it
};

// What a first run starts from: the window's Max tokens and Batch wait (the engine thread
// starts from the same until the window sends its settings).
constexpr int kDefaultMaxTokens = 200;
constexpr int kDefaultBatchWaitMs = 200;

// One batch size of a sweep: simulated clients through a fresh engine of that max batch.
// The batch sweep measures max batch 1, 2, 4, ... 2^(kBatchSweepSizes - 1), each
// kBatchSweepRepeats times after an untimed warm-up, the sizes in alternating order (up, down,
// up), and keeps for each size the run whose mean decode step time is the median.
constexpr int kBatchSweepSizes = 5;
constexpr int kBatchSweepRepeats = 3;

struct BatchSweepPoint {
  int64_t max_batch = 0;
  // The kept run's decode steps (telemetry::is_decode_step): both figures below are made of
  // these sums, so throughput x step time = tokens per step, exactly.
  telemetry::StepTotals decode;
  // The mean decode step time's range over the repeats: the noise around the kept run.
  double fastest_step_ms = 0.0;
  double slowest_step_ms = 0.0;

  // Decode throughput: decode tokens / decode step time (telemetry::throughput_tokens_per_s).
  double tokens_per_s() const { return telemetry::throughput_tokens_per_s(decode); }
  // Mean decode step time: the latency every sequence of the batch waits per token.
  double decode_step_ms() const { return telemetry::mean_step_time_ms(decode); }
  // Tokens per decode step: at most max_batch (fewer while the last requests drain).
  double tokens_per_step() const {
    return decode.steps > 0 ? static_cast<double>(decode.tokens) / static_cast<double>(decode.steps)
                            : 0.0;
  }
};

// The kept point of one size's repeated runs (the median mean step time; for an even count,
// the faster of the two middle ones), with the spread of all of them; nullopt for none.
std::optional<BatchSweepPoint> median_sweep_point(int64_t max_batch,
                                                  std::span<const telemetry::StepTotals> runs);

// The batch sweep's order of runs and what they add up to: an untimed batch-1 run, then every
// size once per pass, passes alternating up and down so a slow spell of a shared machine does
// not land on the large sizes only. The worker runs next_batch() and hands its decode totals
// to record(), which gives a size's point once its last repeat is in.
class BatchSweepPlan {
 public:
  // The max batch of the next run; none once the sweep is complete.
  std::optional<int64_t> next_batch() const;
  std::optional<BatchSweepPoint> record(const telemetry::StepTotals& totals);
  const QVector<BatchSweepPoint>& points() const { return points_; }

 private:
  // The sweep's index of run `run` (0 is the untimed one) and its pass.
  int size_index(int run) const;
  int runs_taken_ = 0;
  std::vector<std::vector<telemetry::StepTotals>> totals_ =
      std::vector<std::vector<telemetry::StepTotals>>(kBatchSweepSizes);
  QVector<BatchSweepPoint> points_;
};

// The requests one size of the sweep serves (greedy, all at t = 0): twice as many as its slots,
// prompts drawn from `text_ids` (random ids below `vocab_size` when empty).
serving::WorkloadSpec batch_sweep_workload(int64_t max_batch, std::vector<int32_t> text_ids,
                                           int32_t vocab_size);
// What every size serves, for the chart's tooltip: "2 requests per slot, prompts of 16-32
// tokens, up to 32 output tokens each, greedy, on a fresh engine after one untimed run".
QString batch_sweep_workload_text();

// A load of simulated clients arriving spread out in time (Poisson, at rate_per_s), run on
// an engine of its own beside the window's, like the batch sweep: how a batching policy copes
// when requests trickle in rather than all at once.
struct StaggeredLoad {
  BatchingChoice batching;
  int clients = 16;
  int rate_per_s = 100;
};

// A staggered load's run: the engine's summary of what finished (serving::summarize_load).
// A run stopped early covers fewer than `load.clients` requests.
struct StaggeredLoadResult {
  StaggeredLoad load;
  int64_t max_batch = 0;  // the engine's batch slots
  serving::LoadSummary summary;
  bool complete() const { return summary.requests == load.clients; }
  // Requests per step, on average over its steps (prefill and decode alike).
  double mean_batch() const {
    return summary.mean_batch_occupancy * static_cast<double>(max_batch);
  }
};

}  // namespace servescope::gui

Q_DECLARE_METATYPE(servescope::compute::BackendChoice)
Q_DECLARE_METATYPE(servescope::gui::BatchingChoice)
Q_DECLARE_METATYPE(servescope::gui::BatchCollecting)
Q_DECLARE_METATYPE(servescope::gui::BatchSweepPoint)
Q_DECLARE_METATYPE(servescope::gui::StaggeredLoad)
Q_DECLARE_METATYPE(servescope::gui::StaggeredLoadResult)
Q_DECLARE_METATYPE(servescope::gui::Speed)
Q_DECLARE_METATYPE(servescope::gui::EngineInfo)
Q_DECLARE_METATYPE(servescope::gui::GeneratedToken)
Q_DECLARE_METATYPE(servescope::gui::EngineCounters)
Q_DECLARE_METATYPE(servescope::serving::SamplingParams)
Q_DECLARE_METATYPE(servescope::gguf::GgmlType)
