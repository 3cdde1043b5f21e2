#include "engine/eval/quant_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/core/error.h"
#include "engine/eval/quantize_model.h"
#include "engine/eval/variant_model.h"
#include "engine/serving/generator.h"
#include "engine/serving/kv_block_pool.h"

namespace servescope::eval {
namespace {

std::string format_number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4g", value);
  return buffer;
}

// The first n tokens of the text, after BOS when there is one.
std::vector<int32_t> text_prompt(const QuantReportOptions& options, int64_t n) {
  std::vector<int32_t> prompt;
  if (options.bos_id >= 0) prompt.push_back(options.bos_id);
  const auto take = std::min<size_t>(static_cast<size_t>(n), options.text_ids.size());
  prompt.insert(prompt.end(), options.text_ids.begin(),
                options.text_ids.begin() + static_cast<std::ptrdiff_t>(take));
  return prompt;
}

// Counts the run's work items for QuantReportOptions::on_stage and stops the run (throwing
// ReportCancelled) at the next item once QuantReportOptions::cancel is set.
class RunTracker {
 public:
  RunTracker(const QuantReportOptions& options, int64_t total) : options_(options) {
    progress_.total = total;
  }
  void stage(std::string name) {
    check();
    progress_.stage = std::move(name);
    if (options_.on_stage) options_.on_stage(progress_);
  }
  void item() {
    check();
    progress_.done = std::min(progress_.done + 1, progress_.total);
    if (options_.on_stage) options_.on_stage(progress_);
  }

 private:
  void check() const {
    if (options_.cancel != nullptr && options_.cancel->load()) throw ReportCancelled();
  }
  const QuantReportOptions& options_;
  ReportProgress progress_;
};

// A model and the KV type it runs with: one row of the report to time.
struct TimedVariant {
  model::Model* model = nullptr;
  gguf::GgmlType kv_type = gguf::GgmlType::F32;
  VariantReport* report = nullptr;
};

// Best prefill and decode tokens/s of each variant over a few greedy runs of the same request,
// after one untimed run each that warms caches and scratch buffers. The runs go round-robin
// over the variants, so a change in the machine's load (other programs) hits every variant
// alike and the speed-ups stay comparable.
void measure_speeds(const std::vector<TimedVariant>& variants, const QuantReportOptions& options,
                    RunTracker& tracker) {
  if (variants.empty()) return;
  serving::EngineRequest request;
  const int64_t context = variants.front().model->config.context_length;
  const int64_t longest_prompt = context - options.timing_decode_tokens;
  request.prompt_ids = text_prompt(
      options, std::max<int64_t>(1, std::min(options.timing_prompt_tokens, longest_prompt - 1)));
  request.max_tokens = options.timing_decode_tokens;
  request.stop_token = -1;
  const int64_t rounds = 1 + std::max<int64_t>(1, options.timing_repeats);  // first: warm-up
  for (int64_t round = 0; round < rounds; ++round) {
    tracker.stage(round == 0 ? std::string("speed, warm-up")
                             : "speed, round " + std::to_string(round) + " of " +
                                   std::to_string(rounds - 1));
    for (const TimedVariant& v : variants) {
      tracker.item();
      v.model->transformer->set_kv_type(v.kv_type);
      const serving::GenerationResult result = serving::generate(*v.model->transformer, request);
      if (round == 0) continue;
      v.report->prefill_tokens_per_s =
          std::max(v.report->prefill_tokens_per_s, result.prefill_tokens_per_s());
      v.report->decode_tokens_per_s =
          std::max(v.report->decode_tokens_per_s, result.decode_tokens_per_s());
    }
  }
}

// The report's fixed load (QuantReportOptions::load_*) on each variant: latency and cost per
// request through the serving engine with the variant's KV type. Round-robin over the
// variants like the speed runs, keeping each variant's run with the shortest wall time: a
// burst of other work on the machine should not decide a verdict.
void measure_under_load(const std::vector<TimedVariant>& variants,
                        const QuantReportOptions& options, RunTracker& tracker) {
  const int64_t rounds = std::max<int64_t>(1, options.load_repeats);
  for (int64_t round = 0; round < rounds; ++round) {
    tracker.stage("under load, round " + std::to_string(round + 1) + " of " +
                  std::to_string(rounds));
    for (const TimedVariant& v : variants) {
      tracker.item();
      const serving::EngineConfig config = report_load_engine(options, v.kv_type);
      v.model->transformer->set_kv_type(v.kv_type);
      const std::vector<serving::SimulatedRequest> requests = serving::make_workload(
          report_load(options, static_cast<int32_t>(v.model->config.vocab_size)));
      const serving::LoadSummary load =
          serving::run_load(*v.model->transformer, model::summarize_weights(v.model->file).bytes,
                            config, requests)
              .summary;
      if (round == 0 || load.wall_s < v.report->load.wall_s) v.report->load = load;
    }
  }
  for (const TimedVariant& v : variants) {
    v.report->cost = serving::request_cost(v.report->load, options.price_per_hour);
  }
}

// Drops trailing chunks until the baseline's kept distributions fit in `budget` bytes (at
// least one chunk stays).
void cut_to_memory_budget(std::vector<std::vector<int32_t>>& chunks, int64_t vocab,
                          uint64_t budget) {
  int64_t positions = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    positions += static_cast<int64_t>(chunks[i].size()) - 1;
    if (i > 0 && QualityEvaluator::baseline_bytes(positions, vocab) > budget) {
      chunks.resize(i);
      return;
    }
  }
}

double ratio(double numerator, double denominator) {
  return denominator > 0.0 ? numerator / denominator : 0.0;
}

// Work items of a whole run, for the progress fraction: per model (the baseline and each
// variant) its greedy continuation and its chunks, then the timed runs of every round.
int64_t run_items(const QuantReportOptions& options, int64_t chunks) {
  const auto models = static_cast<int64_t>(1 + options.types.size() * options.kv_types.size());
  const int64_t speed_rounds = 1 + std::max<int64_t>(1, options.timing_repeats);
  const int64_t load_rounds = std::max<int64_t>(1, options.load_repeats);
  return models * (1 + chunks + speed_rounds + load_rounds) +
         static_cast<int64_t>(options.types.size());
}

}  // namespace

std::vector<gguf::GgmlType> quantisation_targets() {
  std::vector<gguf::GgmlType> targets;
  for (uint32_t id = 0; id <= static_cast<uint32_t>(gguf::GgmlType::BF16); ++id) {
    const auto type = static_cast<gguf::GgmlType>(id);
    if (!gguf::is_supported(type)) continue;
    try {
      llama_file_type(type);  // refuses the types quantize_model cannot write
    } catch (const InputError&) {
      continue;
    }
    targets.push_back(type);
  }
  return targets;
}

std::vector<QuantizeScheme> quantisation_schemes() {
  std::vector<QuantizeScheme> schemes;
  for (const gguf::GgmlType type : quantisation_targets()) schemes.push_back({type});
  for (const char* recipe : {"q4_k_m", "q5_k_m"}) {
    try {
      schemes.push_back(parse_quantize_scheme(recipe));
    } catch (const InputError&) {  // a build without the recipe
    }
  }
  return schemes;
}

serving::WorkloadSpec report_load(const QuantReportOptions& options, int32_t vocab_size) {
  serving::WorkloadSpec spec;
  spec.clients = options.load_clients;
  spec.prompt_tokens = {options.load_prompt_tokens, options.load_prompt_tokens};
  spec.output_tokens = {options.load_output_tokens, options.load_output_tokens};
  spec.text_ids = options.text_ids;
  spec.vocab_size = vocab_size;
  return spec;
}

serving::EngineConfig report_load_engine(const QuantReportOptions& options,
                                         gguf::GgmlType kv_type) {
  serving::EngineConfig config;
  config.max_batch_size = options.load_max_batch;
  config.kv_type = serving::check_kv_type(kv_type);
  return config;
}

Verdict judge(const VariantReport& variant, const VariantReport& baseline,
              const QuantReportOptions& options) {
  Verdict verdict;
  const auto check = [&](std::string limit, bool passed, std::string reason) {
    if (!passed) verdict.reasons.push_back(reason);
    verdict.checks.push_back({std::move(limit), passed, std::move(reason)});
  };
  const double kl = variant.quality.vs_baseline.mean_kl;
  if (!std::isfinite(kl)) {  // checked whatever the limits: a figure never measured never passes
    check("measured", false,
          "mean KL is not a number: the logits hold NaN or Inf (the weights do), so the "
          "variant's quality was not measured");
  } else if (std::isfinite(options.max_kl)) {
    const bool passed = kl <= options.max_kl;
    check("max_kl", passed,
          "mean KL " + format_number(kl) + (passed ? " is within" : " exceeds") + " --max-kl " +
              format_number(options.max_kl));
  }
  if (std::isfinite(options.max_tpot_ms)) {
    const double tpot = variant.load.tpot_ms.p99;
    const bool passed = tpot <= options.max_tpot_ms;
    check("max_tpot_ms", passed,
          "p99 TPOT under the load " + format_number(tpot) + " ms" +
              (passed ? " is within" : " exceeds") + " --max-tpot-ms " +
              format_number(options.max_tpot_ms));
  }
  if (options.min_speedup > 0.0) {
    const bool passed = variant.decode_speedup >= options.min_speedup;
    check("min_speedup", passed,
          "decode speed-up " + format_number(variant.decode_speedup) + "x" +
              (passed ? " meets" : " is below") + " --min-speedup " +
              format_number(options.min_speedup));
  }
  const bool smaller = variant.memory_bytes < baseline.memory_bytes;
  check("memory", smaller,
        "memory (weights + a full context's KV cache, " + std::to_string(variant.memory_bytes) +
            " bytes) is" + (smaller ? "" : " not") + " smaller than the baseline's (" +
            std::to_string(baseline.memory_bytes) + ")");
  verdict.accepted = verdict.reasons.empty();
  return verdict;
}

QuantReport run_quant_report(const gguf::GgufFile& source, const QuantReportOptions& options,
                             const ProgressCallback& on_progress) {
  if (options.types.empty()) throw InputError("quant-report needs at least one weight type");
  if (options.kv_types.empty()) throw InputError("quant-report needs at least one KV cache type");
  const auto baseline_model = load_quantised_variant(source, gguf::GgmlType::F32, options.backend);
  const model::ModelConfig& config = baseline_model->config;
  for (const gguf::GgmlType kv_type : options.kv_types) {  // refuse before the long work
    compute::check_kv_store_shape(kv_type, 1, config.kv_dim());
  }
  std::vector<std::vector<int32_t>> chunks = split_into_chunks(
      options.text_ids, config.context_length, options.bos_id, options.max_chunks);
  const int64_t text_positions = scored_positions(chunks);
  cut_to_memory_budget(chunks, config.vocab_size, options.max_baseline_bytes);
  RunTracker tracker(options, run_items(options, static_cast<int64_t>(chunks.size())));
  QualityEvaluator evaluator(std::move(chunks), [&](const EvalProgress& progress) {
    if (on_progress) on_progress(progress);
    tracker.item();
  });
  tracker.stage("quality of f32");
  const std::vector<int32_t> greedy_prompt = text_prompt(options, options.greedy_prompt_tokens);
  const std::vector<int32_t> baseline_greedy =
      greedy_continuation(*baseline_model->transformer, greedy_prompt, options.greedy_tokens);

  // Fills the measures every variant shares, the baseline included (speed comes later).
  auto describe = [&](model::Model& m, gguf::GgmlType kv_type, VariantReport& report) {
    m.transformer->set_kv_type(kv_type);
    report.kv_type = weight_type_label(kv_type);
    const model::WeightSummary weights = model::summarize_weights(m.file);
    report.weight_bytes = weights.bytes;
    report.parameters = weights.parameters;
    report.bits_per_weight =
        ratio(8.0 * static_cast<double>(weights.bytes), static_cast<double>(weights.parameters));
    report.tensor_types = weights.tensor_types;
    report.kv_bytes_per_token =
        serving::kv_bytes_per_token(serving::kv_layout(config, serving::check_kv_type(kv_type)));
    report.memory_bytes = report.weight_bytes +
                          report.kv_bytes_per_token * static_cast<uint64_t>(config.context_length);
    report.greedy_identical_tokens = identical_prefix_length(
        baseline_greedy, greedy_continuation(*m.transformer, greedy_prompt, options.greedy_tokens));
    tracker.item();
  };

  QuantReport report;
  report.source = source.name();
  report.backend = baseline_model->backend->name();
  report.baseline.type = "f32";
  describe(*baseline_model, gguf::GgmlType::F32, report.baseline);
  report.baseline.quality = evaluator.run_baseline(*baseline_model->transformer, "f32");
  report.positions = evaluator.positions_total();
  report.text_positions = text_positions;
  report.baseline.verdict = {true, {}, {}};

  // Quality, one variant after another; every model stays loaded for the speed rounds.
  std::vector<std::unique_ptr<model::Model>> variant_models;
  std::vector<std::pair<model::Model*, gguf::GgmlType>> runs;  // per report.variants entry
  for (const QuantizeScheme& scheme : options.types) {
    tracker.stage("quantising to " + scheme_label(scheme));
    variant_models.push_back(load_quantised_variant(source, scheme, options.backend));
    tracker.item();
    model::Model& variant = *variant_models.back();
    const std::vector<LayerError> weight_error =
        summarize_by_layer(measure_quantisation_error(source, scheme));
    for (const gguf::GgmlType kv_type : options.kv_types) {
      VariantReport v;
      v.type = scheme_label(scheme);
      const std::string label = options.kv_types.size() > 1 ? v.type + " kv " + v.kv_type : v.type;
      tracker.stage("quality of " + label);
      describe(variant, kv_type, v);
      v.weight_error = weight_error;
      v.quality = evaluator.compare(*variant.transformer, label);
      report.variants.push_back(std::move(v));
      runs.emplace_back(&variant, kv_type);
    }
  }

  std::vector<TimedVariant> timed = {{baseline_model.get(), gguf::GgmlType::F32, &report.baseline}};
  for (size_t i = 0; i < runs.size(); ++i) {
    timed.push_back({runs[i].first, runs[i].second, &report.variants[i]});
  }
  measure_speeds(timed, options, tracker);
  measure_under_load(timed, options, tracker);

  for (VariantReport& v : report.variants) {
    v.weight_bytes_ratio = ratio(static_cast<double>(v.weight_bytes),
                                 static_cast<double>(report.baseline.weight_bytes));
    v.memory_ratio = ratio(static_cast<double>(v.memory_bytes),
                           static_cast<double>(report.baseline.memory_bytes));
    v.decode_speedup = ratio(v.decode_tokens_per_s, report.baseline.decode_tokens_per_s);
    v.prefill_speedup = ratio(v.prefill_tokens_per_s, report.baseline.prefill_tokens_per_s);
    v.verdict = judge(v, report.baseline, options);
  }
  return report;
}

}  // namespace servescope::eval
