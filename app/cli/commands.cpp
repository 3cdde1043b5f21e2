#include "app/cli/commands.h"

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "app/cli/cli_options.h"
#include "engine/compute/vulkan/device_probe.h"
#include "engine/core/error.h"
#include "engine/model/model.h"
#include "engine/serving/generator.h"

namespace servescope::cli {
namespace {

using nlohmann::json;

// Options every subcommand accepts.
OptionSpec with_common(OptionSpec spec) {
  spec.valued.insert({"model", "backend", "device"});
  return spec;
}

std::unique_ptr<model::Model> open_model(const Options& options) {
  const std::string path = options.get_or("model", default_model_path());
  if (!options.has("model") && !std::filesystem::exists(path)) {
    throw UsageError("no --model given and the bundled default model " + path +
                     " is not there; pass --model PATH to a GGUF file");
  }
  if (options.get_int("device", 0) < 0) throw UsageError("--device needs a device index >= 0");
  // The backend factory takes the Vulkan device choice from the environment.
  if (options.has("device")) setenv("SERVESCOPE_VULKAN_DEVICE", options.get("device")->c_str(), 1);
  return model::load_model(path, compute::parse_backend_kind(options.get_or("backend", "cpu")));
}

// Shortest decimal that reads back as the same float: logits print as 0.1234567, not as the
// 17 digits of the float's double.
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

std::vector<int32_t> prompt_ids(const Options& options, const model::Model& m) {
  if (options.has("ids") == options.has("prompt")) {
    throw UsageError("give exactly one of --prompt TEXT or --ids 1,2,3");
  }
  if (options.has("ids")) return parse_id_list(*options.get("ids"));
  return m.require_tokenizer().encode_with_bos(*options.get("prompt"));
}

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
      {"parameters", weights.parameters},
      {"weight_bytes", weights.bytes},
      {"tensor_types", weights.tensor_types},
      {"kv_bytes_per_token", {{"f32", c.kv_bytes_per_token(4)}, {"f16", c.kv_bytes_per_token(2)}}},
  };
  if (c.architecture == model::Architecture::kLlama) doc["rope_freq_base"] = shortest(c.rope_freq_base);
  if (auto* vk = dynamic_cast<compute::vulkan::VulkanBackend*>(m->backend.get())) {
    const auto probed = compute::vulkan::probe_roofs(*vk);  // measured once, then cached
    doc["device"] = {{"name", vk->device().name},
                     {"type", vk->device().type},
                     {"stream_gb_per_s", probed.roofs.stream_gb_per_s},
                     {"compute_gflop_per_s", probed.roofs.compute_gflop_per_s}};
  }
  if (m->tokenizer) {
    const Vocabulary& v = m->tokenizer->vocabulary();
    doc["tokenizer"] = {{"model", v.model}, {"tokens", v.tokens.size()}, {"bos_id", v.bos_id},
                        {"eos_id", v.eos_id}, {"add_bos", v.add_bos}};
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
  const Options options(args, with_common({{"ids"}, {"all"}}));
  if (!options.has("ids")) throw UsageError("logits needs --ids 1,2,3");
  const auto m = open_model(options);
  const std::vector<int32_t> ids = parse_id_list(*options.get("ids"));
  model::KvCache cache =
      model::create_kv_cache(m->config, *m->backend, static_cast<int64_t>(ids.size()));
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

int run_generate(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(args, with_common({{"prompt", "ids", "max-tokens", "temperature", "top-k",
                                            "top-p", "seed"},
                                           {"greedy", "json", "no-stop"}}));
  const auto m = open_model(options);
  serving::GenerationRequest request;
  request.prompt_ids = prompt_ids(options, *m);
  request.max_tokens = options.get_int("max-tokens", 128);
  request.sampling = sampling_params(options);
  if (m->tokenizer && !options.has("no-stop")) request.stop_token = m->tokenizer->vocabulary().eos_id;

  const bool as_json = options.has("json");
  std::unique_ptr<TextStreamDecoder> stream;
  if (!as_json && m->tokenizer) {
    stream = std::make_unique<TextStreamDecoder>(*m->tokenizer);
    if (options.has("prompt")) out << *options.get("prompt");
  }
  const serving::GenerationResult result =
      serving::generate(*m->transformer, request, [&](int32_t token) {
        if (stream && token != request.stop_token) out << stream->push(token) << std::flush;
      });

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
        {"stop_reason", serving::stop_reason_name(result.stop_reason)},
        {"backend", m->backend->name()},
        {"sampling", request.sampling.greedy
                         ? json{{"greedy", true}}
                         : json{{"greedy", false}, {"temperature", request.sampling.temperature},
                                {"top_k", request.sampling.top_k}, {"top_p", request.sampling.top_p},
                                {"seed", request.sampling.seed}}},
        {"prefill_tokens", result.prefill_tokens},
        {"prefill_ms", result.prefill_ms},
        {"prefill_tokens_per_s", result.prefill_tokens_per_s()},
        {"decode_steps", result.decode_steps},
        {"decode_ms", result.decode_ms},
        {"decode_tokens_per_s", result.decode_tokens_per_s()},
    };
    out << doc.dump(2) << "\n";
  } else {
    if (stream) out << stream->finish();
    if (!m->tokenizer) out << json(result.generated_ids).dump();
    out << "\n";
    std::cerr << "prefill: " << result.prefill_tokens << " tokens in " << result.prefill_ms
              << " ms (" << result.prefill_tokens_per_s() << " tokens/s); decode: "
              << result.decode_steps << " tokens in " << result.decode_ms << " ms ("
              << result.decode_tokens_per_s() << " tokens/s)";
    if (!request.sampling.greedy) std::cerr << "; seed " << request.sampling.seed;
    std::cerr << "\n";
  }
  return 0;
}

}  // namespace

std::string default_model_path() {
  if (const char* env = std::getenv("SERVESCOPE_MODEL")) return env;
  return SERVESCOPE_DEFAULT_MODEL;
}

const std::vector<Subcommand>& subcommands() {
  static const std::vector<Subcommand> all = {
      {"info", "architecture, sizes, tensor types, parameters, weight and KV-cache bytes", run_info},
      {"tokenize", "--text T [--no-bos]: token ids and pieces", run_tokenize},
      {"logits", "--ids 1,2,3 [--all]: next-token logits of the last (or every) position",
       run_logits},
      {"generate",
       "(--prompt T | --ids 1,2,3) [--max-tokens N] [--greedy | --temperature T --top-k K "
       "--top-p P --seed S] [--json] [--no-stop]: continue a prompt",
       run_generate},
  };
  return all;
}

}  // namespace servescope::cli
