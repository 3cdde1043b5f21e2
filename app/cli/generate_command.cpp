// servescope-cli generate: continue a prompt through the serving engine with one batch slot, or
// with --n N, N samples of it that share its prompt's KV blocks (one batch slot each).
#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
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
// it), the step times split into prefill and decode, the finished requests (one per sample)
// and, with --top, the token probabilities; and the copy-on-write events of shared blocks.
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
      decode_tokens += step.decode_tokens;
    }
    for (const telemetry::BatchEntry& e : step.batch) {
      if (e.sampled_token >= 0) on_token_(e.sampled_token);
    }
  }
  void on_request(const telemetry::RequestRecord& request) override {
    samples[request.request_id] = request;
  }
  void on_kv_event(const telemetry::KvEvent& event) override {
    copies_on_write += event.kind == telemetry::KvEventKind::kCopyOnWrite;
  }
  void on_token(const telemetry::TokenRecord& token) override { tokens.push_back(token); }
  void forget() {
    result = {};
    decode_tokens = 0;
    samples.clear();
    copies_on_write = 0;
    tokens.clear();
  }

  serving::GenerationResult result;  // its generated ids and finish reason: see samples
  int64_t decode_tokens = 0;         // every sample's: decode_steps x samples decoding
  std::map<int64_t, telemetry::RequestRecord> samples;  // by request id
  int64_t copies_on_write = 0;
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

// The continuation as text, exactly as streamed: ill-formed bytes become U+FFFD.
std::string continuation_text(const Tokenizer* tokenizer, const std::vector<int32_t>& ids,
                              int32_t stop_token) {
  if (tokenizer == nullptr) return {};
  TextStreamDecoder decoder(*tokenizer);
  std::string text;
  for (const int32_t token : ids) {
    if (token != stop_token) text += decoder.push(token);
  }
  return text + decoder.finish();
}

json sampling_json(const serving::SamplingParams& p) {
  if (p.greedy) return {{"greedy", true}};
  return {{"greedy", false},
          {"temperature", p.temperature},
          {"top_k", p.top_k},
          {"top_p", p.top_p},
          {"seed", p.seed}};
}

}  // namespace

int run_generate(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(
      args, with_common({{"prompt", "prompt-file", "ids", "max-tokens", "temperature", "top-k",
                          "top-p", "seed", "kv-type", "top", "kv-bytes", "n"},
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
  const int64_t n = options.get_int("n", 1);

  const bool as_json = options.has("json");
  std::unique_ptr<TextStreamDecoder> stream;
  // The serving engine with one batch slot: the path the desktop application runs.
  bool streaming = false;  // not while --warmup runs
  GenerateObserver observer([&](int32_t token) {
    if (streaming && stream && n == 1 && token != request.stop_token) {
      out << stream->push(token) << std::flush;
    }
  });
  serving::EngineConfig config;
  config.max_batch_size = n;  // a batch slot per sample
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
    observer.forget();  // the measured run's figures only
  }
  // Checks the request: nothing is printed for one that fails.
  const std::vector<serving::SequenceId> ids = engine.submit_samples(request, n);
  if (!as_json && m->tokenizer && n == 1) {
    stream = std::make_unique<TextStreamDecoder>(*m->tokenizer);
    if (const std::optional<std::string> prompt = prompt_text(options)) out << *prompt;
  }
  streaming = true;
  // What sharing saves is largest once every sample holds the prompt's blocks, before any has
  // copied the partly filled one: the most after any step.
  uint64_t saved_bytes = 0;
  while (engine.has_unfinished()) {
    engine.step();
    if (n > 1) saved_bytes = std::max(saved_bytes, engine.kv_usage().bytes_saved_by_sharing);
  }
  const serving::GenerationResult& result = observer.result;
  const telemetry::RequestRecord& first = observer.samples.at(ids.front());
  const Tokenizer* tokenizer = m->tokenizer.get();
  const std::string text = continuation_text(tokenizer, first.output_ids, request.stop_token);

  if (as_json) {
    json doc = {
        {"prompt_ids", request.prompt_ids},
        {"generated_ids", first.output_ids},
        {"text", text},
        {"finish_reason", serving::finish_reason_name(first.finish_reason)},
        {"backend", m->backend->name()},
        {"kv_type", kv_type_label(config.kv_type)},
        {"sampling", sampling_json(request.sampling)},
        {"prefill_tokens", result.prefill_tokens},
        {"prefill_ms", result.prefill_ms},
        {"prefill_tokens_per_s", result.prefill_tokens_per_s()},
        {"decode_steps", result.decode_steps},
        {"decode_ms", result.decode_ms},
        {"decode_tokens_per_s", result.decode_tokens_per_s()},
        {"warmup", options.has("warmup")},
    };
    if (n > 1) {
      // Sample i drew with seed + i; its first token came from the prompt's one prefill.
      json samples = json::array();
      for (size_t i = 0; i < ids.size(); ++i) {
        const telemetry::RequestRecord& r = observer.samples.at(ids[i]);
        serving::SamplingParams p = request.sampling;
        p.seed += i;
        samples.push_back({{"generated_ids", r.output_ids},
                           {"text", continuation_text(tokenizer, r.output_ids, request.stop_token)},
                           {"finish_reason", serving::finish_reason_name(r.finish_reason)},
                           {"sampling", sampling_json(p)}});
      }
      doc["n"] = n;
      doc["samples"] = samples;
      doc["decode_tokens"] = observer.decode_tokens;
      doc["decode_tokens_per_s"] =
          result.decode_ms > 0.0 ? 1000.0 * double(observer.decode_tokens) / result.decode_ms : 0.0;
      doc["kv_bytes_per_block"] = engine.kv_usage().bytes_per_block;
      doc["kv_bytes_saved_by_sharing"] = saved_bytes;
      doc["kv_copy_on_write_blocks"] = observer.copies_on_write;
    }
    if (request.top_k_alternatives) {
      // The first sample's, as generated_ids is (every sample reports its own).
      std::vector<telemetry::TokenRecord> first_tokens;
      std::ranges::copy_if(observer.tokens, std::back_inserter(first_tokens),
                           [&](const auto& t) { return t.request_id == ids.front(); });
      doc["tokens"] = token_records_json(first_tokens, m->tokenizer.get());
    }
    out << doc.dump(2) << "\n";
  } else if (n == 1) {
    if (stream) out << stream->finish();
    if (!m->tokenizer) out << json(first.output_ids).dump();
    out << std::endl;  // the text ends before the timing line on a shared terminal
    std::cerr << "prefill: " << result.prefill_tokens << " tokens in " << result.prefill_ms
              << " ms (" << result.prefill_tokens_per_s()
              << " tokens/s); decode: " << result.decode_steps << " tokens in " << result.decode_ms
              << " ms (" << result.decode_tokens_per_s() << " tokens/s)";
    if (!request.sampling.greedy) std::cerr << "; seed " << request.sampling.seed;
    std::cerr << "\n";
  } else {
    const std::optional<std::string> prompt = prompt_text(options);
    for (size_t i = 0; i < ids.size(); ++i) {
      const telemetry::RequestRecord& r = observer.samples.at(ids[i]);
      out << "--- sample " << i + 1 << " of " << n;
      if (!request.sampling.greedy) out << " (seed " << request.sampling.seed + i << ")";
      out << " ---\n";
      if (tokenizer != nullptr) {
        out << prompt.value_or("") << continuation_text(tokenizer, r.output_ids, request.stop_token);
      } else {
        out << json(r.output_ids).dump();
      }
      out << "\n";
    }
    out << std::flush;
    std::cerr << "prefill: " << result.prefill_tokens << " tokens in " << result.prefill_ms
              << " ms, once for " << n << " samples; decode: " << observer.decode_tokens
              << " tokens in " << result.decode_steps << " steps, " << result.decode_ms
              << " ms; KV shared: " << saved_bytes << " bytes saved at most against " << n
              << " separate requests, " << observer.copies_on_write
              << " blocks copied on write\n";
  }
  return 0;
}

}  // namespace servescope::cli
