// servescope-cli bench: simulated clients through the batching engine.
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <optional>

#include "app/cli/command_support.h"
#include "app/common/data_files.h"
#include "engine/eval/quantize_model.h"
#include "engine/serving/engine.h"
#include "engine/serving/load_generator.h"
#include "engine/serving/warm_up.h"

namespace servescope::cli {

using nlohmann::json;

namespace {

// The serving engine's KV type from --kv-type (default F16), through the one parser every
// subcommand uses.
gguf::GgmlType kv_type_option(const Options& options) {
  return serving::check_kv_type(eval::parse_kv_type(options.get_or("kv-type", "f16")));
}

// "MIN:MAX" or "N" (= N:N) for --prompt-tokens and --output-tokens.
serving::LengthRange length_range(const Options& options, const std::string& name,
                                  serving::LengthRange fallback) {
  const auto text = options.get(name);
  if (!text) return fallback;
  const size_t colon = text->find(':');
  const auto number = [&](const std::string& part) {
    int64_t value = 0;
    const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (error != std::errc() || end != part.data() + part.size() || part.empty()) {
      throw UsageError("--" + name + " needs MIN:MAX or N with whole numbers >= 1, got '" + *text +
                       "'");
    }
    check_bounds(name, static_cast<double>(value), part);
    return value;
  };
  const serving::LengthRange range =
      colon == std::string::npos
          ? serving::LengthRange{number(*text), number(*text)}
          : serving::LengthRange{number(text->substr(0, colon)), number(text->substr(colon + 1))};
  if (range.max < range.min) {
    throw UsageError("--" + name + ": MIN is above MAX in '" + *text + "'");
  }
  return range;
}

// The engine configuration of the command line, for one max batch size.
serving::EngineConfig engine_config(const Options& options, const model::Model& m,
                                    int64_t max_batch) {
  serving::EngineConfig config;
  config.max_batch_size = max_batch;
  config.token_budget = options.get_int("token-budget", config.token_budget);
  config.kv_type = kv_type_option(options);
  config.block_size = options.get_int("block-size", config.block_size);
  const std::string policy = options.get_or("policy", "continuous");
  if (policy != "continuous" && policy != "static") {
    throw UsageError("--policy needs continuous or static, got '" + policy + "'");
  }
  config.batching = serving::parse_batching_policy(policy);
  if (options.has("batch-wait-ms")) {
    if (config.batching != serving::BatchingPolicy::kStatic) {
      throw UsageError("--batch-wait-ms needs --policy static (continuous batching never waits)");
    }
    config.batch_wait_ms = options.get_double("batch-wait-ms", 0.0);
  }
  apply_kv_budget(options, m.config, config);
  return config;
}

// Prompts are drawn from the bundled stories when the model has a tokenizer, else random ids.
serving::WorkloadSpec workload_spec(const Options& options, const model::Model& m) {
  serving::WorkloadSpec spec;
  spec.clients = options.get_int("clients", spec.clients);
  spec.rate_per_s = options.get_double("rate", 0.0);
  spec.prompt_tokens = length_range(options, "prompt-tokens", {32, 64});
  spec.output_tokens = length_range(options, "output-tokens", {32, 64});
  spec.seed = static_cast<uint64_t>(options.get_int("seed", 0));
  if (spec.prompt_tokens.max > m.config.context_length) {
    throw UsageError("--prompt-tokens: " + std::to_string(spec.prompt_tokens.max) +
                     " tokens exceed the model's context of " +
                     std::to_string(m.config.context_length));
  }
  spec.vocab_size = static_cast<int32_t>(m.config.vocab_size);
  if (m.tokenizer) {
    const std::filesystem::path path = app::bundled_eval_text_path();
    if (!std::filesystem::exists(path)) {
      throw UsageError(app::missing_data_file_message("the bundled prompt text", path));
    }
    spec.text_ids = m.tokenizer->encode(read_regular_file(path));
  }
  return spec;
}

// "bench: 5/8 requests done" on stderr: rewritten in place on a terminal; into a pipe or a
// file, a line every two seconds and one at the end, so that a long run shows it is alive.
constexpr auto kPipedInterval = std::chrono::seconds(2);

serving::LoadProgress stderr_bench_progress(const std::string& label) {
  using Clock = std::chrono::steady_clock;
  const bool terminal = isatty(STDERR_FILENO) != 0;
  return [terminal, label, last = int64_t{-1}, next_line = Clock::now() + kPipedInterval](
             int64_t done, int64_t total) mutable {
    const auto now = Clock::now();
    const bool changed = done != last;
    const bool due = (terminal || done == total) ? changed : now >= next_line;
    if (!due) return;
    last = done;
    next_line = now + kPipedInterval;
    std::cerr << (terminal ? "\r\033[K" : "") << "bench: " << label << done << "/" << total
              << " requests done" << (terminal && done < total ? "" : "\n") << std::flush;
  };
}

// Ctrl-C during a run: the current step finishes, the run stops and the summary of what
// completed is printed, marked "interrupted" (exit status 130, as for a SIGINT). A second
// Ctrl-C ends the process at once (SA_RESETHAND restores the default action).
volatile std::sig_atomic_t g_interrupted = 0;

extern "C" void note_interrupt(int /*signal_number*/) { g_interrupted = 1; }

void stop_on_interrupt() {
  struct sigaction action {};
  action.sa_handler = note_interrupt;
  action.sa_flags = SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
}

bool interrupted() { return g_interrupted != 0; }

constexpr int kInterruptedExitStatus = 130;  // 128 + SIGINT

serving::LoadSummary run_bench_once(model::Model& m, const serving::EngineConfig& config,
                                    const serving::WorkloadSpec& spec, const std::string& label) {
  const std::vector<serving::SimulatedRequest> requests = serving::make_workload(spec);
  const uint64_t weight_bytes = model::summarize_weights(m.file).bytes;
  // The kernels run once untimed, so the first request's TTFT is no pipeline compilation.
  serving::EngineConfig warm = config;
  serving::warm_up(*m.transformer, weight_bytes, warm);
  warm.warmed_up = true;
  return serving::run_load(*m.transformer, weight_bytes, warm, requests,
                           stderr_bench_progress(label), interrupted)
      .summary;
}

json engine_json(const serving::EngineConfig& config, const model::Model& m) {
  const int64_t blocks = serving::kv_block_count(config, m.config);
  const uint64_t per_block =
      serving::kv_bytes_per_block(serving::kv_layout(m.config, config.kv_type, config.block_size));
  return {{"kv_type", kv_type_label(config.kv_type)},
          {"block_size", config.block_size},
          {"kv_blocks", blocks},
          {"kv_bytes_per_block", per_block},
          {"kv_bytes", per_block * static_cast<uint64_t>(blocks)},
          {"token_budget", serving::scheduler_config(config, m.config).token_budget},
          {"policy", serving::batching_policy_name(config.batching)},
          {"batch_wait_ms", config.batch_wait_ms}};
}

}  // namespace

int run_bench(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(
      args, with_common({{"clients", "rate", "prompt-tokens", "output-tokens", "max-batch",
                          "token-budget", "kv-type", "kv-blocks", "kv-bytes", "block-size", "seed",
                          "sweep-max", "policy", "batch-wait-ms", "price-per-hour", "remote",
                          "timeout-s"},
                         {"sweep"}}));
  if (options.has("sweep") && (options.has("max-batch") || options.has("clients"))) {
    throw UsageError(
        "--sweep sets the max batch size and the clients itself; drop --max-batch "
        "and --clients (use --sweep-max to stop early)");
  }
  if (options.has("sweep-max") && !options.has("sweep")) {
    throw UsageError("--sweep-max needs --sweep");
  }
  const std::optional<double> price = price_per_hour_option(options);
  const auto m = open_model(options);
  serving::WorkloadSpec spec = workload_spec(options, *m);
  json doc = {{"model", m->file.name()},
              {"backend", m->backend->name()},
              {"rate_per_s", spec.rate_per_s},
              {"prompt_tokens", {spec.prompt_tokens.min, spec.prompt_tokens.max}},
              {"output_tokens", {spec.output_tokens.min, spec.output_tokens.max}},
              {"seed", spec.seed}};

  if (options.has("remote")) {
#ifdef SERVESCOPE_HAS_REMOTE
    if (options.has("sweep") || options.has("max-batch") || options.has("policy")) {
      throw UsageError(
          "--remote sends the load to a server, whose own settings batch it: --sweep, "
          "--max-batch and --policy apply to the local engine only");
    }
    return run_bench_remote(options, spec, doc, out);
#else
    throw UsageError("--remote: this servescope-cli was built without Qt Network");
#endif
  }
  if (options.has("timeout-s")) throw UsageError("--timeout-s needs --remote");
  if (!options.has("sweep")) {
    const serving::EngineConfig config =
        engine_config(options, *m, options.get_int("max-batch", 8));
    doc["max_batch"] = config.max_batch_size;
    doc["clients"] = spec.clients;
    doc["engine"] = engine_json(config, *m);
    stop_on_interrupt();
    const serving::LoadSummary s = run_bench_once(*m, config, spec, "");
    doc.update(load_summary_json(s));
    doc["latency"] = latency_json(s, load_description(spec, config));
    doc["cost"] = cost_json(serving::request_cost(s, price));
    doc["interrupted"] = interrupted();
    out << doc.dump(2) << "\n";
    return interrupted() ? kInterruptedExitStatus : 0;
  }

  // Each batch size gets twice as many clients as it has slots, all arriving at once: the
  // batch stays full while the first wave decodes and the second wave waits its turn.
  const int64_t sweep_max = options.get_int("sweep-max", 32);
  json sweep = json::array();
  stop_on_interrupt();
  for (int64_t batch = 1; batch <= sweep_max && !interrupted(); batch *= 2) {
    const serving::EngineConfig config = engine_config(options, *m, batch);
    spec.clients = 2 * batch;
    const serving::LoadSummary s =
        run_bench_once(*m, config, spec, "max batch " + std::to_string(batch) + ": ");
    sweep.push_back({{"max_batch", batch},
                     {"clients", spec.clients},
                     {"throughput_tokens_per_s", s.output_tokens_per_s},
                     {"mean_step_ms", s.mean_step_ms},
                     {"mean_decode_step_ms", s.mean_decode_step_ms},
                     {"decode_tokens_per_s", s.decode_tokens_per_s},
                     {"mean_kernel_ms", kernel_ms_json(s.mean_kernel_ms, s.kernel_times_measured)},
                     {"achieved_gb_per_s", s.achieved_gb_per_s},
                     {"achieved_gflop_per_s", s.achieved_gflop_per_s},
                     {"mean_batch_occupancy", s.mean_batch_occupancy},
                     {"ttft_ms", percentiles_json(s.ttft_ms)},
                     {"tpot_ms", percentiles_json(s.tpot_ms)},
                     {"kv_peak_blocks", s.kv_peak_blocks},
                     {"preemptions", s.preemptions},
                     {"steps", s.steps},
                     {"latency", latency_json(s, load_description(spec, config))},
                     {"cost", cost_json(serving::request_cost(s, price))}});
    doc["engine"] = engine_json(config, *m);  // the last one: the largest KV default
  }
  doc["sweep"] = sweep;
  doc["interrupted"] = interrupted();
  out << doc.dump(2) << "\n";
  return interrupted() ? kInterruptedExitStatus : 0;
}

}  // namespace servescope::cli
