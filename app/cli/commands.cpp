#include "app/cli/commands.h"

#include <unistd.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "app/cli/cli_options.h"
#include "app/cli/command_support.h"
#include "app/cli/make_model_command.h"
#include "app/cli/output_path.h"
#include "app/common/data_files.h"
#include "engine/compute/vulkan/device_probe.h"
#include "engine/core/error.h"
#include "engine/eval/evaluator.h"
#include "engine/eval/quant_report.h"
#include "engine/eval/quantize_model.h"
#include "engine/eval/tensor_error.h"
#include "engine/model/model.h"
#include "engine/serving/engine.h"
#include "engine/serving/generator.h"
#include "engine/serving/load_generator.h"

namespace servescope::cli {
namespace {

using nlohmann::json;

serving::SamplingParams sampling_params(const Options& options) {
  serving::SamplingParams p;
  const bool sampling_options = options.has("temperature") || options.has("top-k") ||
                                options.has("top-p") || options.has("seed");
  if (options.has("greedy") && sampling_options) {
    throw UsageError("--greedy cannot be combined with --temperature, --top-k, --top-p or --seed");
  }
  p.greedy = options.has("greedy");
  p.temperature = static_cast<float>(options.get_double("temperature", 0.8));
  p.top_k = options.get_int("top-k", 0);
  p.top_p = static_cast<float>(options.get_double("top-p", 0.95));
  // Without --seed, a fresh seed each run; it is reported so the run can be repeated.
  p.seed = options.has("seed") ? static_cast<uint64_t>(options.get_int("seed", 0))
                               : std::random_device{}();
  serving::validate(p);
  return p;
}

// "f32", "f16", "q8_0": the KV type names as the command line spells them.
std::string kv_type_label(serving::KvType type) {
  std::string label(serving::kv_type_name(type));
  for (char& c : label) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return label;
}

// What one token adds to the KV cache for each KV type, from the block pool's own formula; null
// where the type cannot store this model's rows (Q8_0 needs kv_dim a multiple of 32).
json kv_bytes_per_token_by_type(const model::ModelConfig& c) {
  json bytes = json::object();
  for (const serving::KvType type : serving::kKvTypes) {
    const serving::KvLayout layout = serving::kv_layout(c, type);
    try {
      serving::validate(layout);
      bytes[kv_type_label(type)] = serving::kv_bytes_per_token(layout);
    } catch (const InputError&) {
      bytes[kv_type_label(type)] = nullptr;
    }
  }
  return bytes;
}

int run_info(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(args, with_common({}));
  const auto m = open_model(options);
  const model::ModelConfig& c = m->config;
  const model::WeightSummary weights = model::summarize_weights(m->file);
  json doc = {
      {"file", m->file.name()},
      {"gguf_version", m->file.version()},
      {"architecture", model::architecture_name(c.architecture)},
      {"name", c.name},
      {"backend", m->backend->name()},
      {"vocab_size", c.vocab_size},
      {"context_length", c.context_length},
      {"embedding_dim", c.dim},
      {"layers", c.n_layers},
      {"heads", c.n_heads},
      {"kv_heads", c.n_kv_heads},
      {"head_dim", c.head_dim},
      {"ffn_dim", c.ffn_dim},
      {"norm_eps", shortest(c.norm_eps)},
      {"tied_output", c.tied_output},
      {"random_weights", c.random_weights},
      {"parameters", weights.parameters},
      {"weight_bytes", weights.bytes},
      {"tensor_types", weights.tensor_types},
      {"kv_bytes_per_token", kv_bytes_per_token_by_type(c)},
  };
  if (c.random_weights) doc["note"] = model::kRandomWeightsNote;
  if (c.architecture == model::Architecture::kLlama)
    doc["rope_freq_base"] = shortest(c.rope_freq_base);
  if (auto* vk = dynamic_cast<compute::vulkan::VulkanBackend*>(m->backend.get())) {
    const auto probed = compute::vulkan::probe_roofs(*vk);  // measured once, then cached
    doc["device"] = {{"name", vk->device().name},
                     {"type", vk->device().type},
                     {"stream_gb_per_s", probed.roofs.stream_gb_per_s},
                     {"compute_gflop_per_s", probed.roofs.compute_gflop_per_s}};
  }
  if (m->tokenizer) {
    const Vocabulary& v = m->tokenizer->vocabulary();
    doc["tokenizer"] = {{"model", v.model},
                        {"tokens", v.tokens.size()},
                        {"bos_id", v.bos_id},
                        {"eos_id", v.eos_id},
                        {"add_bos", v.add_bos}};
  }
  out << doc.dump(2) << "\n";
  return 0;
}

int run_tokenize(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(args, with_common({{"text"}, {"no-bos"}}));
  if (!options.has("text")) throw UsageError("tokenize needs --text TEXT");
  const auto m = open_model(options);
  const Tokenizer& tokenizer = m->require_tokenizer();
  const std::string text = *options.get("text");
  const std::vector<int32_t> ids =
      options.has("no-bos") ? tokenizer.encode(text) : tokenizer.encode_with_bos(text);
  json pieces = json::array();
  for (const int32_t id : ids) pieces.push_back(tokenizer.piece(id));
  out << json{{"ids", ids}, {"pieces", pieces}}.dump() << "\n";
  return 0;
}

int run_logits(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(args, with_common({{"ids", "kv-type"}, {"all"}}));
  if (!options.has("ids")) throw UsageError("logits needs --ids 1,2,3");
  const auto m = open_model(options);
  const std::vector<int32_t> ids = parse_id_list(*options.get("ids"));
  model::KvCache cache = m->transformer->new_cache(static_cast<int64_t>(ids.size()));
  const bool all = options.has("all");
  const std::vector<float> logits = m->transformer->forward(ids, cache, all);
  const auto vocab = static_cast<size_t>(m->config.vocab_size);
  json rows = json::array();
  for (size_t r = 0; r < logits.size() / vocab; ++r) {
    rows.push_back(float_array(logits.data() + r * vocab, vocab));
  }
  out << json{{"ids", ids}, {"logits", rows}}.dump() << "\n";
  return 0;
}

// The serving engine's KV type from --kv-type (default F16), through the one parser every
// subcommand uses.
serving::KvType kv_type_option(const Options& options) {
  return serving::kv_type_of(eval::parse_kv_type(options.get_or("kv-type", "f16")));
}

// What `generate` reads from the engine's records: each sampled token as it comes (to stream
// it), the step times split into prefill and decode, the finished request and, with --top,
// the token probabilities.
class GenerateObserver final : public telemetry::Observer {
 public:
  explicit GenerateObserver(std::function<void(int32_t)> on_token)
      : on_token_(std::move(on_token)) {}

  void on_step(const telemetry::StepRecord& step) override {
    // The first step runs the prompt (one chunk: the token budget is the context) and samples
    // the first token; every later step decodes one token.
    if (step.prefill_tokens > 0) {
      result.prefill_tokens += step.prefill_tokens;
      result.prefill_ms += step.wall_ms;
    } else {
      result.decode_ms += step.wall_ms;
      ++result.decode_steps;
    }
    for (const telemetry::BatchEntry& e : step.batch) {
      if (e.sampled_token >= 0) on_token_(e.sampled_token);
    }
  }
  void on_request(const telemetry::RequestRecord& request) override {
    result.generated_ids = request.output_ids;
    result.finish_reason = request.finish_reason;
  }
  void on_kv_event(const telemetry::KvEvent& /*event*/) override {}
  void on_token(const telemetry::TokenRecord& token) override { tokens.push_back(token); }

  serving::GenerationResult result;
  std::vector<telemetry::TokenRecord> tokens;

 private:
  std::function<void(int32_t)> on_token_;
};

json token_records_json(const std::vector<telemetry::TokenRecord>& tokens, const Tokenizer* t) {
  const auto piece = [t](int32_t id) { return t != nullptr ? json(t->piece(id)) : json(nullptr); };
  json array = json::array();
  for (const telemetry::TokenRecord& token : tokens) {
    json top = json::array();
    for (const telemetry::TokenAlternative& a : token.top) {
      top.push_back({{"id", a.id}, {"piece", piece(a.id)}, {"prob", a.prob}});
    }
    array.push_back({{"id", token.id},
                     {"piece", piece(token.id)},
                     {"prob", token.prob},
                     {"sampling_prob", token.sampling_prob},
                     {"top", top}});
  }
  return array;
}

int run_generate(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(args, with_common({{"prompt", "ids", "max-tokens", "temperature", "top-k",
                                            "top-p", "seed", "kv-type", "top"},
                                           {"greedy", "json", "no-stop"}}));
  if (options.has("top") && !options.has("json")) throw UsageError("--top needs --json");
  if (options.get_int("top", 0) < 0) throw UsageError("--top needs a count of 0 or more");
  const auto m = open_model(options);
  serving::EngineRequest request;
  request.prompt_ids = prompt_ids(options, *m);
  request.max_tokens = options.get_int("max-tokens", 128);
  request.sampling = sampling_params(options);
  if (m->tokenizer && !options.has("no-stop"))
    request.stop_token = m->tokenizer->vocabulary().eos_id;
  if (options.has("top")) request.top_k_alternatives = options.get_int("top", 0);

  const bool as_json = options.has("json");
  std::unique_ptr<TextStreamDecoder> stream;
  if (!as_json && m->tokenizer) {
    stream = std::make_unique<TextStreamDecoder>(*m->tokenizer);
    if (options.has("prompt")) out << *options.get("prompt");
  }
  // The serving engine with one batch slot: the path the desktop application runs.
  GenerateObserver observer([&](int32_t token) {
    if (stream && token != request.stop_token) out << stream->push(token) << std::flush;
  });
  serving::EngineConfig config;
  config.max_batch_size = 1;
  config.token_budget = m->config.context_length;
  config.kv_type = serving::kv_type_of(m->transformer->kv_type());
  serving::Engine engine(*m->transformer, model::summarize_weights(m->file).bytes, config,
                         &observer);
  engine.submit(request);
  engine.run_until_idle();
  const serving::GenerationResult& result = observer.result;

  // The continuation as text, exactly as streamed: ill-formed bytes become U+FFFD.
  std::string text;
  if (m->tokenizer) {
    TextStreamDecoder decoder(*m->tokenizer);
    for (const int32_t token : result.generated_ids) {
      if (token != request.stop_token) text += decoder.push(token);
    }
    text += decoder.finish();
  }
  if (as_json) {
    json doc = {
        {"prompt_ids", request.prompt_ids},
        {"generated_ids", result.generated_ids},
        {"text", text},
        {"stop_reason", serving::finish_reason_name(result.finish_reason)},
        {"backend", m->backend->name()},
        {"kv_type", kv_type_label(config.kv_type)},
        {"sampling", request.sampling.greedy ? json{{"greedy", true}}
                                             : json{{"greedy", false},
                                                    {"temperature", request.sampling.temperature},
                                                    {"top_k", request.sampling.top_k},
                                                    {"top_p", request.sampling.top_p},
                                                    {"seed", request.sampling.seed}}},
        {"prefill_tokens", result.prefill_tokens},
        {"prefill_ms", result.prefill_ms},
        {"prefill_tokens_per_s", result.prefill_tokens_per_s()},
        {"decode_steps", result.decode_steps},
        {"decode_ms", result.decode_ms},
        {"decode_tokens_per_s", result.decode_tokens_per_s()},
    };
    if (request.top_k_alternatives) {
      doc["tokens"] = token_records_json(observer.tokens, m->tokenizer.get());
    }
    out << doc.dump(2) << "\n";
  } else {
    if (stream) out << stream->finish();
    if (!m->tokenizer) out << json(result.generated_ids).dump();
    out << std::endl;  // the text ends before the timing line on a shared terminal
    std::cerr << "prefill: " << result.prefill_tokens << " tokens in " << result.prefill_ms
              << " ms (" << result.prefill_tokens_per_s()
              << " tokens/s); decode: " << result.decode_steps << " tokens in " << result.decode_ms
              << " ms (" << result.decode_tokens_per_s() << " tokens/s)";
    if (!request.sampling.greedy) std::cerr << "; seed " << request.sampling.seed;
    std::cerr << "\n";
  }
  return 0;
}

// --- quantisation lab: quantize, perplexity, quant-report ---------------------------------

// "tensor 12/48 blk.1.ffn_up.weight" on stderr, rewritten in place on a terminal.
eval::QuantizeProgress stderr_progress() {
  const bool terminal = isatty(STDERR_FILENO) != 0;
  return [terminal](int64_t done, int64_t total, const std::string& name) {
    std::cerr << (terminal ? "\r\033[K" : "") << "quantize: tensor " << done << "/" << total << " "
              << name << (terminal && done < total ? "" : "\n") << std::flush;
  };
}

int run_quantize(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(args, {{"model", "type", "out"}, {}});
  if (!options.has("type") || !options.has("out")) {
    throw UsageError("quantize needs --type f32|f16|q8_0|q4_0 and --out OUT.gguf");
  }
  const std::filesystem::path in = options.get_or("model", default_model_path());
  const std::filesystem::path out_path = *options.get("out");
  const gguf::GgmlType type = eval::parse_weight_type(*options.get("type"));
  check_output_path(out_path, in);
  const gguf::GgufFile source = gguf::GgufFile::open(in);
  write_via_partial(out_path, [&](const std::filesystem::path& partial) {
    eval::quantize_model(source, type, stderr_progress()).write(partial);
  });

  const gguf::GgufFile written = gguf::GgufFile::open(out_path);  // read back: it must load
  int64_t converted = 0;
  for (const gguf::TensorInfo& t : written.tensors()) converted += t.type == type ? 1 : 0;
  out << json{{"input", in.string()},
              {"output", out_path.string()},
              {"type", eval::weight_type_label(type)},
              {"file_type", eval::llama_file_type(type)},
              {"tensors", written.tensors().size()},
              {"tensors_of_type", converted},
              {"input_weight_bytes", model::summarize_weights(source).bytes},
              {"output_weight_bytes", model::summarize_weights(written).bytes},
              {"output_file_bytes", written.file_size()}}
             .dump(2)
      << "\n";
  return 0;
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

json quality_json(const eval::VariantQuality& q) {
  return {{"perplexity", q.perplexity},
          {"mean_kl", q.vs_baseline.mean_kl},
          {"p99_kl", q.vs_baseline.p99_kl},
          {"max_kl", q.vs_baseline.max_kl},
          {"top1_agreement", q.vs_baseline.top1_agreement}};
}

int run_perplexity(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(args, with_common({{"text-file", "max-chunks", "kv-type"}, {}}));
  const auto m = open_model(options);
  const std::vector<int32_t> ids = evaluation_ids(options, *m);
  eval::QualityEvaluator evaluator(
      eval::split_into_chunks(ids, m->config.context_length, m->tokenizer->vocabulary().bos_id,
                              options.get_int("max-chunks", 0)),
      stderr_eval_progress());
  const eval::VariantQuality q = evaluator.score(*m->transformer, m->file.name());
  out << json{{"model", m->file.name()},
              {"backend", m->backend->name()},
              {"text", options.get_or("text-file", app::bundled_eval_text_path().string())},
              {"text_tokens", ids.size()},
              {"positions", q.positions},
              {"perplexity", q.perplexity}}
             .dump(2)
      << "\n";
  return 0;
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

int run_weight_error(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(args, {{"model", "type"}, {}});
  if (!options.has("type")) throw UsageError("weight-error needs --type f32|f16|q8_0|q4_0");
  const gguf::GgmlType type = eval::parse_weight_type(*options.get("type"));
  const gguf::GgufFile source = gguf::GgufFile::open(options.get_or("model", default_model_path()));
  const std::vector<eval::TensorError> errors = eval::measure_quantisation_error(source, type);
  json tensors = json::array();
  for (const eval::TensorError& e : errors) {
    tensors.push_back({{"name", e.name},
                       {"type", gguf::type_name(e.type)},
                       {"elements", e.elements},
                       {"rmse", e.rmse},
                       {"max_abs_error", e.max_abs_error},
                       {"relative_error", e.relative_error},
                       {"sqnr_db", finite_or_null(e.sqnr_db)},
                       {"histogram", e.histogram.counts}});
  }
  out << json{{"model", source.name()},
              {"type", eval::weight_type_label(type)},
              {"bin_edges", eval::default_error_bin_edges()},
              {"layers", layer_errors_json(eval::summarize_by_layer(errors))},
              {"tensors", tensors}}
             .dump(2)
      << "\n";
  return 0;
}

json variant_json(const eval::VariantReport& v) {
  const json layers = layer_errors_json(v.weight_error);
  return {{"type", v.type},
          {"kv_type", v.kv_type},
          {"weight_bytes", v.weight_bytes},
          {"weight_bytes_ratio", v.weight_bytes_ratio},
          {"kv_bytes_per_token", v.kv_bytes_per_token},
          {"memory_bytes", v.memory_bytes},
          {"memory_ratio", v.memory_ratio},
          {"quality", quality_json(v.quality)},
          {"greedy_identical_tokens", v.greedy_identical_tokens},
          {"prefill_tokens_per_s", v.prefill_tokens_per_s},
          {"decode_tokens_per_s", v.decode_tokens_per_s},
          {"prefill_speedup", v.prefill_speedup},
          {"decode_speedup", v.decode_speedup},
          {"weight_error_by_layer", layers},
          {"verdict", {{"accepted", v.verdict.accepted}, {"reasons", v.verdict.reasons}}}};
}

int run_quant_report(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(args, with_common({{"types", "text-file", "max-chunks", "max-kl",
                                            "min-speedup", "greedy-tokens", "kv-types"},
                                           {}}));
  const std::string path = options.get_or("model", default_model_path());
  const auto m = open_model(options);  // the source: its tokenizer and backend choice
  eval::QuantReportOptions ro;
  ro.types.clear();
  std::stringstream list(options.get_or("types", "f32,f16,q8_0,q4_0"));
  for (std::string item; std::getline(list, item, ',');)
    ro.types.push_back(eval::parse_weight_type(item));
  ro.kv_types.clear();
  std::stringstream kv_list(options.get_or("kv-types", "f32"));
  for (std::string item; std::getline(kv_list, item, ',');)
    ro.kv_types.push_back(eval::parse_kv_type(item));
  ro.backend = compute::parse_backend_kind(options.get_or("backend", "cpu"));
  ro.text_ids = evaluation_ids(options, *m);
  ro.bos_id = m->require_tokenizer().vocabulary().bos_id;
  ro.max_chunks = options.get_int("max-chunks", 0);
  ro.greedy_tokens = options.get_int("greedy-tokens", ro.greedy_tokens);
  ro.max_kl = options.get_double("max-kl", ro.max_kl);
  ro.min_speedup = options.get_double("min-speedup", ro.min_speedup);
  const eval::QuantReport report = eval::run_quant_report(m->file, ro, stderr_eval_progress());
  if (report.positions < report.text_positions) {
    std::cerr << "quant-report: evaluated the first " << report.positions << " of "
              << report.text_positions
              << " positions (the baseline's distributions must fit in memory)\n";
  }

  json variants = json::array();
  for (const eval::VariantReport& v : report.variants) variants.push_back(variant_json(v));
  out << json{{"model", path},
              {"backend", report.backend},
              {"text", options.get_or("text-file", app::bundled_eval_text_path().string())},
              {"positions", report.positions},
              {"text_positions", report.text_positions},
              {"kv_types", options.get_or("kv-types", "f32")},
              {"limits", {{"max_kl", finite_or_null(ro.max_kl)}, {"min_speedup", ro.min_speedup}}},
              {"baseline", variant_json(report.baseline)},
              {"variants", variants}}
             .dump(2)
      << "\n";
  return 0;
}

// --- serving benchmark: bench ------------------------------------------------------------

// "MIN:MAX" or "N" (= N:N) for --prompt-tokens and --output-tokens.
serving::LengthRange length_range(const Options& options, const std::string& name,
                                  serving::LengthRange fallback) {
  const auto text = options.get(name);
  if (!text) return fallback;
  const size_t colon = text->find(':');
  const auto number = [&](const std::string& part) {
    int64_t value = 0;
    const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (error != std::errc() || end != part.data() + part.size() || part.empty() || value < 1) {
      throw UsageError("--" + name + " needs MIN:MAX or N with whole numbers >= 1, got '" + *text +
                       "'");
    }
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

int64_t positive_option(const Options& options, const std::string& name, int64_t fallback) {
  const int64_t value = options.get_int(name, fallback);
  if (value < 1) {
    throw UsageError("--" + name + " must be at least 1, got " + std::to_string(value));
  }
  return value;
}

// The engine configuration of the command line, for one max batch size.
serving::EngineConfig engine_config(const Options& options, const model::Model& m,
                                    int64_t max_batch) {
  if (options.has("kv-blocks") && options.has("kv-bytes")) {
    throw UsageError("give at most one of --kv-blocks and --kv-bytes");
  }
  serving::EngineConfig config;
  config.max_batch_size = max_batch;
  config.token_budget = positive_option(options, "token-budget", config.token_budget);
  config.kv_type = kv_type_option(options);
  config.block_size = positive_option(options, "block-size", config.block_size);
  if (options.has("kv-blocks")) config.kv_blocks = positive_option(options, "kv-blocks", 1);
  if (options.has("kv-bytes")) {
    const serving::KvLayout layout =
        serving::kv_layout(m.config, config.kv_type, config.block_size);
    config.kv_blocks = positive_option(options, "kv-bytes", 1) /
                       static_cast<int64_t>(serving::kv_bytes_per_block(layout));
    if (config.kv_blocks < 1) {
      throw UsageError("--kv-bytes is less than one KV block (" +
                       std::to_string(serving::kv_bytes_per_block(layout)) + " bytes)");
    }
  }
  return config;
}

// Prompts are drawn from the bundled stories when the model has a tokenizer, else random ids.
serving::WorkloadSpec workload_spec(const Options& options, const model::Model& m) {
  serving::WorkloadSpec spec;
  spec.clients = positive_option(options, "clients", spec.clients);
  spec.rate_per_s = options.get_double("rate", 0.0);
  if (spec.rate_per_s < 0.0) throw UsageError("--rate must be 0 (all at once) or more requests/s");
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
    std::ifstream in(path, std::ios::binary);
    if (!in) throw UsageError(app::missing_data_file_message("the bundled prompt text", path));
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    spec.text_ids = m.tokenizer->encode(text);
  }
  return spec;
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
          {"mean_kernel_ms", kernel_ms_json(s.mean_kernel_ms, s.kernel_times_measured)},
          {"achieved_gb_per_s", s.achieved_gb_per_s},
          {"achieved_gflop_per_s", s.achieved_gflop_per_s}};
}

// "bench: 5/8 requests done" on stderr, rewritten in place on a terminal.
serving::LoadProgress stderr_bench_progress(const std::string& label) {
  const bool terminal = isatty(STDERR_FILENO) != 0;
  return [terminal, label, last = int64_t{-1}](int64_t done, int64_t total) mutable {
    if (done == last) return;
    last = done;
    if (!terminal && done < total) return;
    std::cerr << (terminal ? "\r\033[K" : "") << "bench: " << label << done << "/" << total
              << " requests done" << (done < total ? "" : "\n") << std::flush;
  };
}

serving::LoadSummary run_bench_once(model::Model& m, const serving::EngineConfig& config,
                                    const serving::WorkloadSpec& spec, const std::string& label) {
  const std::vector<serving::SimulatedRequest> requests = serving::make_workload(spec);
  const uint64_t weight_bytes = model::summarize_weights(m.file).bytes;
  return serving::run_load(*m.transformer, weight_bytes, config, requests,
                           stderr_bench_progress(label))
      .summary;
}

json engine_json(const serving::EngineConfig& config, const model::Model& m) {
  return {{"kv_type", kv_type_label(config.kv_type)},
          {"block_size", config.block_size},
          {"kv_blocks", serving::kv_block_count(config, m.config)},
          {"token_budget", serving::scheduler_config(config, m.config).token_budget}};
}

int run_bench(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(args, with_common({{"clients", "rate", "prompt-tokens", "output-tokens",
                                            "max-batch", "token-budget", "kv-type", "kv-blocks",
                                            "kv-bytes", "block-size", "seed", "sweep-max"},
                                           {"sweep"}}));
  if (options.has("sweep") && (options.has("max-batch") || options.has("clients"))) {
    throw UsageError(
        "--sweep sets the max batch size and the clients itself; drop --max-batch "
        "and --clients (use --sweep-max to stop early)");
  }
  if (options.has("sweep-max") && !options.has("sweep")) {
    throw UsageError("--sweep-max needs --sweep");
  }
  const auto m = open_model(options);
  serving::WorkloadSpec spec = workload_spec(options, *m);
  json doc = {{"model", m->file.name()},
              {"backend", m->backend->name()},
              {"rate_per_s", spec.rate_per_s},
              {"prompt_tokens", {spec.prompt_tokens.min, spec.prompt_tokens.max}},
              {"output_tokens", {spec.output_tokens.min, spec.output_tokens.max}},
              {"seed", spec.seed}};

  if (!options.has("sweep")) {
    const serving::EngineConfig config =
        engine_config(options, *m, positive_option(options, "max-batch", 8));
    doc["max_batch"] = config.max_batch_size;
    doc["clients"] = spec.clients;
    doc["engine"] = engine_json(config, *m);
    doc.update(load_summary_json(run_bench_once(*m, config, spec, "")));
    out << doc.dump(2) << "\n";
    return 0;
  }

  // Each batch size gets twice as many clients as it has slots, all arriving at once: the
  // batch stays full while the first wave decodes and the second wave waits its turn.
  const int64_t sweep_max = positive_option(options, "sweep-max", 32);
  json sweep = json::array();
  for (int64_t batch = 1; batch <= std::min<int64_t>(sweep_max, 32); batch *= 2) {
    const serving::EngineConfig config = engine_config(options, *m, batch);
    spec.clients = 2 * batch;
    const serving::LoadSummary s =
        run_bench_once(*m, config, spec, "max batch " + std::to_string(batch) + ": ");
    sweep.push_back({{"max_batch", batch},
                     {"clients", spec.clients},
                     {"throughput_tokens_per_s", s.output_tokens_per_s},
                     {"mean_step_ms", s.mean_step_ms},
                     {"mean_decode_step_ms", s.mean_decode_step_ms},
                     {"mean_kernel_ms", kernel_ms_json(s.mean_kernel_ms, s.kernel_times_measured)},
                     {"achieved_gb_per_s", s.achieved_gb_per_s},
                     {"achieved_gflop_per_s", s.achieved_gflop_per_s},
                     {"mean_batch_occupancy", s.mean_batch_occupancy},
                     {"ttft_ms", percentiles_json(s.ttft_ms)},
                     {"tpot_ms", percentiles_json(s.tpot_ms)},
                     {"kv_peak_blocks", s.kv_peak_blocks},
                     {"preemptions", s.preemptions},
                     {"steps", s.steps}});
    doc["engine"] = engine_json(config, *m);  // the last one: the largest KV default
  }
  doc["sweep"] = sweep;
  out << doc.dump(2) << "\n";
  return 0;
}

}  // namespace

std::string default_model_path() { return app::bundled_model_path().string(); }

const std::vector<Subcommand>& subcommands() {
  static const std::vector<Subcommand> all = {
      {"info", "architecture, sizes, tensor types, parameters, weight and KV-cache bytes",
       run_info},
      {"tokenize", "--text T [--no-bos]: token ids and pieces", run_tokenize},
      {"logits",
       "--ids 1,2,3 [--all] [--kv-type T]: next-token logits of the last (or every) position",
       run_logits},
      {"devices",
       "the CPU (model, cores, caches) and every Vulkan device (type, driver, memory heaps, "
       "subgroup size, limits); --device N picks vulkan[N]",
       run_devices},
      {"probe",
       "[--fresh]: the device's measured roofs: read GB/s in and beyond the last-level cache, "
       "matrix-multiply GFLOP/s per weight type (cached per device; --fresh remeasures)",
       run_probe},
      {"attention",
       "(--prompt T | --ids 1,2,3) --layer L --head H [--kv-type f32|f16|q8_0]: the softmax "
       "weights of one layer's head over the prompt (row i: query i over positions 0..i)",
       run_attention},
      {"generate",
       "(--prompt T | --ids 1,2,3) [--max-tokens N] [--greedy | --temperature T --top-k K "
       "--top-p P --seed S] [--kv-type f32|f16|q8_0] [--json [--top K]] [--no-stop]: continue a "
       "prompt through the serving engine (--top: each token's probability, its sampling "
       "probability and the K most likely alternatives)",
       run_generate},
      {"quantize", "--type f32|f16|q8_0|q4_0 --out OUT.gguf: re-encode the model's matrices",
       run_quantize},
      make_model_subcommand(),
      {"perplexity",
       "[--text-file PATH] [--max-chunks N] [--kv-type T]: perplexity on a text (default: "
       "the bundled stories)",
       run_perplexity},
      {"weight-error",
       "--type f16|q8_0|q4_0: per-tensor and per-layer error of quantising the model's weights "
       "(RMSE, max, relative, SQNR, histogram)",
       run_weight_error},
      {"quant-report",
       "[--types f32,f16,q8_0,q4_0] [--kv-types f32,f16,q8_0] [--text-file PATH] "
       "[--max-chunks N] [--max-kl X] [--min-speedup X] [--greedy-tokens N]: quality, memory "
       "and speed of each weight type and KV cache type against F32, with a verdict",
       run_quant_report},
      {"kv-error",
       "--kv-type f16|q8_0 (--prompt T | --text-file PATH): per layer, RMSE, max error and "
       "SQNR of the keys and values an F16 or Q8_0 cache holds after the text, against F32",
       run_kv_error},
      {"bench",
       "[--clients N] [--rate R] [--prompt-tokens MIN:MAX] [--output-tokens MIN:MAX] "
       "[--max-batch N] [--token-budget N] [--kv-type f32|f16|q8_0] [--kv-blocks N | --kv-bytes "
       "B] [--block-size N] [--seed S] [--sweep [--sweep-max N]]: simulated clients through the "
       "batching engine; throughput, TTFT/TPOT percentiles, occupancy, KV peak, preemptions "
       "(--sweep: per max batch size 1..32)",
       run_bench},
  };
  return all;
}

}  // namespace servescope::cli
