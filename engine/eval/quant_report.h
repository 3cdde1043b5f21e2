// The quantisation lab's report: for each weight type, what it costs in quality (against the
// F32 baseline on the same text) and what it buys in memory and speed (on the same backend in
// the same run), with a verdict that applies the user's limits.
//
// Every variant is quantised in memory from one source file (F32 or F16), so the comparison is
// of weight types alone. The KV cache's element type is the second, independent dimension: a
// variant is a pair (weight type, KV type), and the baseline is F32 weights with an F32 cache.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/compute/backend.h"
#include "engine/core/error.h"
#include "engine/eval/evaluator.h"
#include "engine/eval/quantize_model.h"
#include "engine/eval/tensor_error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/serving/load_generator.h"
#include "engine/serving/request_cost.h"

namespace servescope::eval {

// Where a report run is: the stage in words and the share of the whole run's work done.
struct ReportProgress {
  std::string stage;  // "quality of q4_0", "speed, round 2 of 5", "under load, round 1 of 3"
  int64_t done = 0;   // work items (a chunk scored, a timed run) done of total
  int64_t total = 0;
};
using ReportProgressCallback = std::function<void(const ReportProgress&)>;

// Thrown by run_quant_report when QuantReportOptions::cancel was set: the run stopped at the
// next chunk or timed run, and nothing of it is reported.
class ReportCancelled : public Error {
 public:
  ReportCancelled() : Error("quant-report was cancelled") {}
};

struct QuantReportOptions {
  // Weight types (pure) or mixed recipes (q4_k_m), each a variant.
  std::vector<QuantizeScheme> types = {
      {gguf::GgmlType::F32}, {gguf::GgmlType::F16}, {gguf::GgmlType::Q8_0}, {gguf::GgmlType::Q4_0}};
  std::vector<gguf::GgmlType> kv_types = {gguf::GgmlType::F32};  // F32, F16 or Q8_0
  compute::BackendKind backend = compute::BackendKind::kCpu;
  std::vector<int32_t> text_ids;  // the evaluation text, tokenised without BOS
  int32_t bos_id = -1;            // put in front of every chunk when >= 0
  int64_t max_chunks = 0;         // 0 = as much of the text as max_baseline_bytes allows
  // The baseline's next-token distributions are kept for the KL comparison (4 bytes x vocab
  // per position); a long text is cut to the chunks that fit.
  uint64_t max_baseline_bytes = uint64_t{1} << 30;
  int64_t greedy_prompt_tokens = 16;  // taken from the text (after BOS) for the greedy run
  int64_t greedy_tokens = 32;
  int64_t timing_prompt_tokens = 64;  // prefill length of the speed measurement
  int64_t timing_decode_tokens = 32;
  int64_t timing_repeats = 5;  // rounds over all variants (round-robin); best of, to damp noise
  // The fixed load every variant's latency and cost are measured under, through the serving
  // engine (serving::run_load): `load_clients` requests all at t = 0, prompts of
  // load_prompt_tokens taken from the text, load_output_tokens each, max batch load_max_batch,
  // continuous batching, the variant's KV type.
  int64_t load_clients = 16;  // twice the batch: a second wave waits, so p50 and p99 differ
  int64_t load_prompt_tokens = 32;
  int64_t load_output_tokens = 32;
  int64_t load_max_batch = 8;
  int64_t load_repeats = 3;  // rounds over all variants; the shortest run of each is kept
  std::optional<double> price_per_hour;  // for the money per request; unset: device time only
  // Verdict limits: a variant is accepted when its mean KL <= max_kl, its p99 TPOT under the
  // load <= max_tpot_ms, its decode speed-up over the baseline >= min_speedup, and its memory
  // (weights and a full context's KV cache) is smaller than the baseline's. A limit left at its
  // default (infinity, 0) is not checked.
  double max_kl = std::numeric_limits<double>::infinity();
  double max_tpot_ms = std::numeric_limits<double>::infinity();
  double min_speedup = 0.0;
  // For an application: every stage and work item (quantising, each chunk scored, each timed
  // run), and a flag it may set from another thread to stop the run early.
  ReportProgressCallback on_stage;
  const std::atomic<bool>* cancel = nullptr;
};

// One limit of the accept-only-if rule applied to one variant.
struct LimitCheck {
  std::string limit;  // "max_kl", "max_tpot_ms", "min_speedup", "memory"; "measured" when a
                      // figure is not a number
  bool passed = false;
  std::string reason;  // the measured value against the limit, in words
};

struct Verdict {
  bool accepted = false;
  std::vector<LimitCheck> checks;    // every limit that was set, passed or not
  std::vector<std::string> reasons;  // why not, one per failed limit; empty when accepted
};

struct VariantReport {
  std::string type;             // weights: "q8_0", or a recipe: "q4_k_m"
  std::string kv_type = "f32";  // KV cache elements
  uint64_t weight_bytes = 0;
  int64_t parameters = 0;                       // elements of every tensor
  double bits_per_weight = 0.0;                 // 8 x weight_bytes / parameters
  std::map<std::string, int64_t> tensor_types;  // type name -> tensors stored in it
  uint64_t kv_bytes_per_token = 0;
  uint64_t memory_bytes = 0;  // weights + KV cache of one full context (context_length tokens)
  std::vector<LayerError> weight_error;  // per layer, quantised against the source values
  VariantQuality quality;
  int64_t greedy_identical_tokens = 0;  // of QuantReportOptions::greedy_tokens
  double prefill_tokens_per_s = 0.0;
  double decode_tokens_per_s = 0.0;
  double weight_bytes_ratio = 1.0;  // variant / baseline
  double memory_ratio = 1.0;        // variant / baseline
  double decode_speedup = 1.0;      // variant / baseline tokens per second
  double prefill_speedup = 1.0;
  serving::LoadSummary load;  // under QuantReportOptions' fixed load: TTFT, TPOT, throughput
  serving::RequestCost cost;  // per request under that load
  Verdict verdict;
};

struct QuantReport {
  std::string source;
  std::string backend;
  int64_t positions = 0;       // evaluated next-token predictions
  int64_t text_positions = 0;  // predictions the whole text holds (more if it was cut)
  VariantReport baseline;      // F32
  std::vector<VariantReport> variants;
};

// The weight types run_quant_report can quantise to (the targets of quantize_model), F32 first.
std::vector<gguf::GgmlType> quantisation_targets();
// Every scheme it can compare: each target type (pure), then the mixed recipes (q4_k_m, ...).
std::vector<QuantizeScheme> quantisation_schemes();

// The fixed load of the options, as the load generator and the engine take it (prompts from
// options.text_ids, else random ids below vocab_size).
serving::WorkloadSpec report_load(const QuantReportOptions& options, int32_t vocab_size);
serving::EngineConfig report_load_engine(const QuantReportOptions& options, gguf::GgmlType kv_type);

// Decides a variant's verdict from its numbers and the options' limits.
Verdict judge(const VariantReport& variant, const VariantReport& baseline,
              const QuantReportOptions& options);

// Runs the whole report. on_progress streams the evaluation (one variant after another).
QuantReport run_quant_report(const gguf::GgufFile& source, const QuantReportOptions& options,
                             const ProgressCallback& on_progress = {});

}  // namespace servescope::eval
