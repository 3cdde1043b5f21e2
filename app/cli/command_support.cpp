#include "app/cli/command_support.h"

#include <unistd.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "app/cli/commands.h"
#include "app/common/data_files.h"
#include "engine/eval/quantize_model.h"
#include "engine/serving/kv_budget.h"

namespace servescope::cli {

using nlohmann::json;

OptionSpec with_common(OptionSpec spec) {
  spec.valued.insert({"model", "backend", "device", "threads", "activations"});
  return spec;
}

compute::BackendChoice backend_choice(const Options& options) {
  compute::BackendChoice choice(compute::parse_backend_kind(options.get_or("backend", "cpu")));
  if (options.has("device")) choice.device = static_cast<uint32_t>(options.get_int("device", 0));
  if (options.has("threads")) choice.threads = static_cast<int>(options.get_int("threads", 0));
  const std::string activations = options.get_or("activations", "f32");
  if (activations != "f32" && activations != "q8_0") {
    throw UsageError("--activations is f32 (exact) or q8_0 (quantised, integer dot products)");
  }
  choice.quantised_activations = activations == "q8_0";
  return choice;
}

std::unique_ptr<model::Model> open_model(const Options& options) {
  const std::string path = options.get_or("model", default_model_path());
  if (!options.has("model") && !std::filesystem::exists(path)) {
    throw UsageError(app::missing_data_file_message("the bundled default model", path) +
                     " (--model PATH)");
  }
  auto m = model::load_model(path, backend_choice(options));
  if (options.has("kv-type"))
    m->transformer->set_kv_type(eval::parse_kv_type(*options.get("kv-type")));
  return m;
}

std::optional<std::string> prompt_text(const Options& options) {
  if (options.has("prompt-file")) return read_regular_file(*options.get("prompt-file"));
  return options.get("prompt");
}

void apply_kv_budget(const Options& options, const model::ModelConfig& model,
                     serving::EngineConfig& config) {
  if (options.has("kv-blocks") && options.has("kv-bytes")) {
    throw UsageError("give at most one of --kv-blocks and --kv-bytes");
  }
  const uint64_t memory = serving::physical_memory_bytes();
  const auto above_memory = [memory](const std::string& option, const std::string& what) {
    return UsageError(option + " " + what + " is above the limit of " + serving::iec_bytes(memory) +
                      " (this machine's memory)");
  };
  config.kv_budget_setting = "--kv-bytes";
  if (options.has("kv-bytes")) {
    config.kv_bytes = options.get_bytes("kv-bytes", 0);
    if (memory > 0 && config.kv_bytes > memory)
      throw above_memory("--kv-bytes", *options.get("kv-bytes"));
  }
  if (options.has("kv-blocks")) {
    config.kv_blocks = options.get_int("kv-blocks", 1);
    config.kv_budget_setting = "--kv-blocks";
    const uint64_t bytes =
        serving::kv_bytes_per_block(serving::kv_layout(model, config.kv_type, config.block_size)) *
        static_cast<uint64_t>(config.kv_blocks);
    if (memory > 0 && bytes > memory) {
      throw above_memory("--kv-blocks",
                         *options.get("kv-blocks") + " (" + serving::iec_bytes(bytes) + ")");
    }
  }
}

std::vector<int32_t> prompt_ids(const Options& options, const model::Model& m) {
  const int given =
      int{options.has("ids")} + int{options.has("prompt")} + int{options.has("prompt-file")};
  if (given != 1) {
    throw UsageError("give exactly one of --prompt TEXT, --prompt-file PATH or --ids 1,2,3");
  }
  if (options.has("ids")) return parse_id_list(*options.get("ids"));
  return m.require_tokenizer().encode_with_bos(*prompt_text(options));
}

std::vector<int32_t> evaluation_ids(const Options& options, const model::Model& m) {
  const std::string path = options.get_or("text-file", app::bundled_eval_text_path().string());
  if (!options.has("text-file") && !std::filesystem::exists(path)) {
    throw UsageError(app::missing_data_file_message("the bundled evaluation text", path) +
                     " (--text-file PATH)");
  }
  return m.require_tokenizer().encode(read_regular_file(path));
}

double shortest(float value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::strtod(std::string(buffer, result.ptr).c_str(), nullptr);
}

json float_array(const float* values, size_t n) {
  json array = json::array();
  for (size_t i = 0; i < n; ++i) array.push_back(shortest(values[i]));
  return array;
}

json finite_or_null(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

// "f32", "f16", "q8_0": the KV type names as the command line spells them.
std::string kv_type_label(gguf::GgmlType type) {
  std::string label(gguf::type_name(type));
  for (char& c : label) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return label;
}

// Progress on stderr: "evaluate: q8_0 381/1530 positions, perplexity 7.9, mean KL 0.004".
// On a terminal the line is rewritten in place and ends when a variant is done.
eval::ProgressCallback stderr_eval_progress() {
  const bool terminal = isatty(STDERR_FILENO) != 0;
  return [terminal](const eval::EvalProgress& p) {
    const bool last = p.positions_done == p.positions_total;
    std::cerr << (terminal ? "\r\033[K" : "") << "evaluate: " << p.variant << " "
              << p.positions_done << "/" << p.positions_total << " positions, perplexity "
              << p.perplexity;
    if (p.vs_baseline.positions > 0) std::cerr << ", mean KL " << p.vs_baseline.mean_kl;
    std::cerr << (terminal && !last ? "" : "\n") << std::flush;
  };
}

json layer_errors_json(const std::vector<eval::LayerError>& layers) {
  json array = json::array();
  for (const eval::LayerError& l : layers) {
    array.push_back({{"layer", l.layer},
                     {"tensors", l.tensors},
                     {"elements", l.elements},
                     {"rmse", l.rmse},
                     {"max_abs_error", l.max_abs_error},
                     {"relative_error", l.relative_error},
                     {"sqnr_db", finite_or_null(l.sqnr_db)}});
  }
  return array;
}

std::optional<double> price_per_hour_option(const Options& options) {
  if (!options.has("price-per-hour")) return std::nullopt;
  return options.get_double("price-per-hour", 0.0);
}

std::string load_description(const serving::WorkloadSpec& spec,
                             const serving::EngineConfig& config) {
  const auto range = [](const serving::LengthRange& r) {
    return r.min == r.max ? std::to_string(r.min)
                          : std::to_string(r.min) + ".." + std::to_string(r.max);
  };
  std::ostringstream text;
  text << spec.clients << " clients ";
  if (spec.rate_per_s > 0.0 && !std::isinf(spec.rate_per_s)) {
    text << "arriving at " << spec.rate_per_s << " requests/s (Poisson)";
  } else {
    text << "all at t = 0";
  }
  text << ", prompts " << range(spec.prompt_tokens) << " tokens, " << range(spec.output_tokens)
       << " output tokens, max batch " << config.max_batch_size << ", "
       << serving::batching_policy_name(config.batching) << " batching";
  if (config.batching == serving::BatchingPolicy::kStatic) {
    text << " (wait up to " << config.batch_wait_ms << " ms)";
  }
  return text.str();
}

json percentiles_json(const serving::Percentiles& p) {
  return {{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}};
}

// null where the backend did not time its kernels (Vulkan without timestamps): no zeros that
// read as measurements.
json kernel_ms_json(const telemetry::KernelTimes& t, bool measured) {
  if (!measured) return nullptr;
  return {{"matmul", t.matmul_ms},
          {"attention", t.attention_ms},
          {"norm", t.norm_ms},
          {"other", t.other_ms}};
}

json load_summary_json(const serving::LoadSummary& s) {
  return {{"requests", s.requests},
          {"prompt_tokens", s.prompt_tokens},
          {"output_tokens", s.output_tokens},
          {"wall_s", s.wall_s},
          {"throughput_tokens_per_s", s.output_tokens_per_s},
          {"busy_s", s.busy_s},
          {"busy_throughput_tokens_per_s",
           s.busy_s > 0.0 ? static_cast<double>(s.output_tokens) / s.busy_s : 0.0},
          {"prompt_tokens_per_s", s.prompt_tokens_per_s},
          {"ttft_ms", percentiles_json(s.ttft_ms)},
          {"tpot_ms", percentiles_json(s.tpot_ms)},
          {"mean_batch_occupancy", s.mean_batch_occupancy},
          {"kv_peak_blocks", s.kv_peak_blocks},
          {"kv_peak_bytes", s.kv_peak_bytes},
          {"preemptions", s.preemptions},
          {"steps", s.steps},
          {"mean_step_ms", s.mean_step_ms},
          {"decode_only_steps", s.decode_only_steps},
          {"mean_decode_step_ms", s.mean_decode_step_ms},
          {"decode_tokens_per_s", s.decode_tokens_per_s},
          {"mean_kernel_ms", kernel_ms_json(s.mean_kernel_ms, s.kernel_times_measured)},
          {"achieved_gb_per_s", s.achieved_gb_per_s},
          {"achieved_gflop_per_s", s.achieved_gflop_per_s}};
}

json latency_json(const serving::LoadSummary& summary, const std::string& load) {
  return {{"load", load},
          {"ttft_ms", {{"p50", summary.ttft_ms.p50}, {"p99", summary.ttft_ms.p99}}},
          {"tpot_ms", {{"p50", summary.tpot_ms.p50}, {"p99", summary.tpot_ms.p99}}}};
}

json cost_json(const serving::RequestCost& cost) {
  json doc = {{"device_seconds_per_request", cost.device_seconds_per_request},
              {"busy_seconds_per_request", cost.busy_seconds_per_request}};
  if (cost.price_per_hour) {
    doc["price_per_hour"] = *cost.price_per_hour;
    doc["price_per_request"] = *cost.price_per_request;
    doc["price_per_million_output_tokens"] = *cost.price_per_million_output_tokens;
  }
  return doc;
}

}  // namespace servescope::cli
