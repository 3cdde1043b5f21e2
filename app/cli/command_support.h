// What the subcommands of servescope-cli share: the common options, opening the model on the
// chosen backend and device, the prompt and text options, JSON number formatting and the
// progress lines on stderr. Each subcommand lives in app/cli/<name>_command.cpp; its run function
// is declared here and registered in commands.cpp.
#pragma once

#include <iosfwd>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "app/cli/cli_options.h"
#include "engine/compute/backend.h"
#include "engine/core/regular_file.h"
#include "engine/eval/evaluator.h"
#include "engine/eval/tensor_error.h"
#include "engine/model/model.h"
#include "engine/serving/engine.h"
#include "engine/serving/kv_block_pool.h"
#include "engine/serving/load_generator.h"
#include "engine/serving/request_cost.h"

namespace servescope::cli {

// Adds the options every subcommand accepts: --model, --backend, --device.
OptionSpec with_common(OptionSpec spec);

// --backend (default cpu) and --device N as the backend factory takes them.
compute::BackendChoice backend_choice(const Options& options);

// The model of --model (default: the bundled one) on the chosen backend, with --kv-type applied
// when the subcommand takes it.
std::unique_ptr<model::Model> open_model(const Options& options);

// --kv-bytes SIZE (and, where the subcommand takes it, --kv-blocks N) onto an engine
// configuration whose kv_type and block_size are set: the KV pool's budget, and the option the
// error of a prompt that does not fit tells the user to raise. Without either the engine's
// default budget applies. UsageError for both given, or a cache above this machine's memory.
void apply_kv_budget(const Options& options, const model::ModelConfig& model,
                     serving::EngineConfig& config);

// The text of --prompt TEXT or of the file --prompt-file PATH (a prompt too long for an
// argument, which the kernel caps at 128 KiB); nullopt when neither is given.
std::optional<std::string> prompt_text(const Options& options);

// Token ids of the prompt text (with BOS) or of --ids 1,2,3; UsageError unless exactly one of
// --prompt, --prompt-file and --ids is given.
std::vector<int32_t> prompt_ids(const Options& options, const model::Model& m);

// The evaluation text (--text-file, else the bundled stories) as token ids without BOS.
std::vector<int32_t> evaluation_ids(const Options& options, const model::Model& m);

// Shortest decimal that reads back as the same float: logits print as 0.1234567, not as the
// 17 digits of the float's double.
double shortest(float value);
nlohmann::json float_array(const float* values, size_t n);
// JSON has no infinity; an exact tensor's SQNR is written as null.
nlohmann::json finite_or_null(double value);

// "f32", "f16", "q8_0": the KV type names as the command line spells them.
std::string kv_type_label(gguf::GgmlType type);

// Progress on stderr: "evaluate: q8_0 381/1530 positions, perplexity 7.9, mean KL 0.004".
// On a terminal the line is rewritten in place and ends when a variant is done.
eval::ProgressCallback stderr_eval_progress();

// Per-layer weight error as weight-error and quant-report write it.
nlohmann::json layer_errors_json(const std::vector<eval::LayerError>& layers);

// --price-per-hour P, or nullopt when not given.
std::optional<double> price_per_hour_option(const Options& options);

// The load a latency figure was measured under, in words: "8 clients all at t = 0, prompts
// 32..64 tokens, 32..64 output tokens, max batch 8, continuous batching".
std::string load_description(const serving::WorkloadSpec& spec,
                             const serving::EngineConfig& config);
// {"load": ..., "ttft_ms": {"p50", "p99"}, "tpot_ms": {"p50", "p99"}}.
nlohmann::json latency_json(const serving::LoadSummary& summary, const std::string& load);
// device_seconds_per_request, busy_seconds_per_request, and with a price: price_per_hour,
// price_per_request, price_per_million_output_tokens.
nlohmann::json cost_json(const serving::RequestCost& cost);

// {"p50", "p90", "p99"}.
nlohmann::json percentiles_json(const serving::Percentiles& p);
// Per kernel class, or null where the backend did not time its kernels (Vulkan without
// timestamps): no zeros that read as measurements.
nlohmann::json kernel_ms_json(const telemetry::KernelTimes& t, bool measured);
// The load summary's fields as `bench` writes them (one run, or one size of a sweep's).
nlohmann::json load_summary_json(const serving::LoadSummary& summary);

// `bench --remote URL`: the same workload as streaming requests to a real serving engine
// (bench_remote.cpp); its JSON has the local bench's keys, null where a figure needs the
// engine's insides. `doc` holds the workload's keys already.
int run_bench_remote(const Options& options, const serving::WorkloadSpec& spec,
                     nlohmann::json doc, std::ostream& out);

// The subcommands, one file each (app/cli/<name>_command.cpp).
int run_info(const std::vector<std::string>& args, std::ostream& out);
int run_tokenize(const std::vector<std::string>& args, std::ostream& out);
int run_logits(const std::vector<std::string>& args, std::ostream& out);
int run_generate(const std::vector<std::string>& args, std::ostream& out);
int run_quantize(const std::vector<std::string>& args, std::ostream& out);
int run_perplexity(const std::vector<std::string>& args, std::ostream& out);
int run_weight_error(const std::vector<std::string>& args, std::ostream& out);
int run_quant_report(const std::vector<std::string>& args, std::ostream& out);
int run_bench(const std::vector<std::string>& args, std::ostream& out);
int run_attention(const std::vector<std::string>& args, std::ostream& out);
int run_devices(const std::vector<std::string>& args, std::ostream& out);
int run_kv_error(const std::vector<std::string>& args, std::ostream& out);
int run_probe(const std::vector<std::string>& args, std::ostream& out);

}  // namespace servescope::cli
