// servescope-cli generate: continue a prompt through the serving engine with one batch slot.
#include <functional>
#include <iostream>
#include <memory>
#include <random>

#include "app/cli/command_support.h"
#include "engine/serving/engine.h"
#include "engine/serving/generator.h"
#include "engine/serving/warm_up.h"

namespace servescope::cli {

using nlohmann::json;

namespace {

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

// --warmup: the same work once, untimed, before the measured run, as llama-bench does: the
// threads, the caches and the KV cache's pages are warm when the timing starts. Its prompt is
// the request's with every id moved by one, so the prefix cache shares none of its blocks and
// the measured run computes its whole prompt.
void warm_up(serving::Engine& engine, const serving::EngineRequest& request, int64_t vocab_size) {
  serving::EngineRequest warmup = request;
  for (int32_t& id : warmup.prompt_ids) id = static_cast<int32_t>((id + 1) % vocab_size);
  warmup.stop_token = -1;  // the same number of steps whatever it samples
  engine.submit(warmup);
  engine.run_until_idle();
}

}  // namespace

int run_generate(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(
      args, with_common({{"prompt", "prompt-file", "ids", "max-tokens", "temperature", "top-k",
                          "top-p", "seed", "kv-type", "top", "kv-bytes"},
                         {"greedy", "json", "no-stop", "warmup"}}));
  if (options.has("top") && !options.has("json")) throw UsageError("--top needs --json");
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
  // The serving engine with one batch slot: the path the desktop application runs.
  bool streaming = false;  // not while --warmup runs
  GenerateObserver observer([&](int32_t token) {
    if (streaming && stream && token != request.stop_token) {
      out << stream->push(token) << std::flush;
    }
  });
  serving::EngineConfig config;
  config.max_batch_size = 1;
  config.token_budget = m->config.context_length;
  config.kv_type = serving::check_kv_type(m->transformer->kv_type());
  apply_kv_budget(options, m->config, config);
  const uint64_t weight_bytes = model::summarize_weights(m->file).bytes;
  // The kernels run once untimed (pipelines, threads, first touch of scratch), so prefill_ms
  // is the phase's speed, not a cold start.
  serving::warm_up(*m->transformer, weight_bytes, config);
  config.warmed_up = true;
  serving::Engine engine(*m->transformer, weight_bytes, config, &observer);
  if (options.has("warmup")) {
    warm_up(engine, request, m->config.vocab_size);
    observer.result = {};  // the measured run's figures only
    observer.tokens.clear();
  }
  engine.submit(request);  // checks the request: nothing is printed for one that fails
  if (!as_json && m->tokenizer) {
    stream = std::make_unique<TextStreamDecoder>(*m->tokenizer);
    if (const std::optional<std::string> prompt = prompt_text(options)) out << *prompt;
  }
  streaming = true;
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
        {"finish_reason", serving::finish_reason_name(result.finish_reason)},
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
        {"warmup", options.has("warmup")},
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

}  // namespace servescope::cli
