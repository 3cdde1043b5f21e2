#include "app/lessons/vocabulary.h"

#include <algorithm>
#include <array>

#include "app/common/limits.h"
#include "engine/eval/random_model.h"

namespace servescope::lessons {
namespace {

constexpr int64_t kMaxDecodeSteps = 512;
// A staggered load's bounds: a run of a few seconds at most on a laptop CPU.
constexpr int64_t kMaxStaggeredClients = 64;
constexpr int64_t kMaxArrivalRate = 10000;  // arrivals per second

struct PanelElements {
  std::string_view panel;
  std::vector<std::string_view> elements;
};

// The panels lessons may name, in the window's tab order, with their highlight elements.
const std::vector<PanelElements>& panel_elements() {
  static const std::vector<PanelElements> table = {
      {"phases", {"prefill", "decode"}},
      {"kv", {"retained-bytes", "blocks"}},
      {"batching", {"slots", "sweep"}},
      {"quantisation", {"variants", "error"}},
      {"roofline", {"memory-roof", "cache-roof", "compute-roof", "points"}},
      {"attention", {"weights"}},
      {"timeline", {"queued", "first-token"}},
  };
  return table;
}

const std::vector<std::string>& panels_as_strings() {
  static const std::vector<std::string> panels = [] {
    std::vector<std::string> names;
    for (const PanelElements& entry : panel_elements()) names.emplace_back(entry.panel);
    return names;
  }();
  return panels;
}

// The weight types a lesson may compare in the quantisation lab (a subset of its choices).
std::vector<std::string> quant_variant_names() { return {"f16", "q8_0", "q4_k_m", "q4_0"}; }

std::vector<std::string> selectable_variants() {
  std::vector<std::string> rows = {"baseline"};
  for (const std::string& type : quant_variant_names()) rows.push_back(type);
  return rows;
}

std::vector<ActionSpec> make_actions() {
  return {
      {"load_model",
       ArgKind::kChoice,
       model_choices(),
       0,
       0,
       {},
       "load_model: bundled",
       "Loads the bundled model or a random-weight timing model of that size (made on first "
       "use), then waits until it is ready."},
      {"set_backend",
       ArgKind::kChoice,
       {"cpu", "vulkan"},
       0,
       0,
       {},
       "set_backend: cpu",
       "Runs the model on the CPU backend or the Vulkan backend (the best device)."},
      {"set_kv_type",
       ArgKind::kChoice,
       kv_type_names(),
       0,
       0,
       {},
       "set_kv_type: q8_0",
       "Stores the KV cache in that element type."},
      {"set_kv_cache",
       ArgKind::kChoice,
       {"on", "off"},
       0,
       0,
       {},
       "set_kv_cache: off",
       "Serves with the KV cache, or without it: every new token then recomputes its whole "
       "context (the engine is rebuilt). Switch it on again before the lesson ends."},
      {"pin",
       ArgKind::kChoice,
       {"on", "off"},
       0,
       0,
       {},
       "pin: on",
       "Pins the last run's headline figures (TTFT, TPOT, tokens/s, KV and weight bytes, KL) "
       "above every panel, so the next run's appear beside them with the ratio; off unpins."},
      {"set_classmates",
       ArgKind::kInteger,
       {},
       0,
       app::kMaxClassmates,
       {},
       "set_classmates: 0",
       "Simulated classmates: other requests sharing the engine with the learner's."},
      {"set_batching",
       ArgKind::kChoice,
       {"continuous", "static"},
       0,
       0,
       {},
       "set_batching: continuous",
       "Continuous batching (admit a request at any step) or static batching (wait to collect "
       "a batch, then run it to its end)."},
      {"set_batch_wait",
       ArgKind::kInteger,
       {},
       0,
       app::kMaxBatchWaitMs,
       {},
       "set_batch_wait: 200",
       "Static batching's wait in milliseconds: the longest the oldest waiting request waits "
       "for the batch to fill."},
      {"set_activations",
       ArgKind::kChoice,
       {"f32", "q8_0"},
       0,
       0,
       {},
       "set_activations: q8_0",
       "CPU backend: exact float activations, or 8-bit activations with integer dot products "
       "for Q8_0 / Q4_0 / Q4_K weights (the model reloads)."},
      {"set_greedy",
       ArgKind::kBool,
       {},
       0,
       0,
       {},
       "set_greedy: true",
       "Greedy decoding (always the most likely token) on or off."},
      {"set_prompt",
       ArgKind::kText,
       {},
       0,
       0,
       {},
       "set_prompt: Once upon a time",
       "Replaces the prompt editor's text."},
      {"set_max_tokens",
       ArgKind::kInteger,
       {},
       1,
       app::kMaxTokens,
       {},
       "set_max_tokens: 100",
       "The number of tokens Generate asks for."},
      {"generate",
       ArgKind::kFields,
       {},
       0,
       0,
       {{"max_tokens",
         ArgKind::kInteger,
         {},
         1,
         app::kMaxTokens,
         false,
         "tokens to generate (default: the window's setting)"}},
       "generate: {max_tokens: 100}",
       "Generates from the prompt and waits until the request finishes."},
      {"decode_steps",
       ArgKind::kInteger,
       {},
       1,
       kMaxDecodeSteps,
       {},
       "decode_steps: 10",
       "Runs that many single decode steps of the current request."},
      {"forget_cached_prefixes",
       ArgKind::kFields,
       {},
       0,
       0,
       {},
       "forget_cached_prefixes: {}",
       "Drops the prompt prefixes the KV pool keeps in free blocks, so the next generate "
       "prefills its whole prompt (time a full prefill of a prompt that ran before)."},
      {"batch_sweep",
       ArgKind::kFields,
       {},
       0,
       0,
       {},
       "batch_sweep: {}",
       "Runs the window's batch-size sweep and waits until it is done."},
      {"staggered_load",
       ArgKind::kFields,
       {},
       0,
       0,
       {{"policy", ArgKind::kChoice, {"continuous", "static"}, 0, 0, true, "the batching policy"},
        {"wait_ms",
         ArgKind::kInteger,
         {},
         0,
         app::kMaxBatchWaitMs,
         false,
         "static only: how long the oldest request waits for the batch to fill (default 0)"},
        {"clients",
         ArgKind::kInteger,
         {},
         1,
         kMaxStaggeredClients,
         true,
         "requests, one per simulated client"},
        {"rate",
         ArgKind::kInteger,
         {},
         1,
         kMaxArrivalRate,
         true,
         "mean arrivals per second (Poisson, the same seeded schedule every run)"}},
       "staggered_load: {policy: static, wait_ms: 200, clients: 16, rate: 100}",
       "Runs simulated clients arriving spread out in time (16 prompt tokens, 100 output "
       "tokens each) on an engine of its own with the window's 16 batch slots, the window's "
       "engine waiting meanwhile as for the batch sweep, and waits until all have finished."},
      {"size_sweep",
       ArgKind::kFields,
       {},
       0,
       0,
       {{"sizes", ArgKind::kChoiceList, timing_model_sizes(), 0, 0, true,
         "timing models to decode with, in order"}},
       "size_sweep: {sizes: [25M, 100M]}",
       "Measures decode milliseconds per token on each timing model and fits time against "
       "weight bytes."},
      {"quant_compare",
       ArgKind::kChoiceList,
       quant_variant_names(),
       0,
       0,
       {},
       "quant_compare: [f16, q8_0, q4_0]",
       "Opens the Quantisation panel, compares those weight types with the F32 baseline on "
       "the same text and the same load (the panel's Compare) and waits until the comparison "
       "is complete."},
      {"select_variant",
       ArgKind::kChoice,
       selectable_variants(),
       0,
       0,
       {},
       "select_variant: q4_0",
       "The row of the last comparison the variant_* measures read (baseline: the F32 row)."},
      {"keep",
       ArgKind::kText,
       {},
       0,
       0,
       {},
       "keep: continuous",
       "Keeps every measure as it stands under that name, for the step's conditions "
       "(continuous.ttft_ms): one side of a comparison, taken once per run."},
      {"open_panel",
       ArgKind::kChoice,
       panels_as_strings(),
       0,
       0,
       {},
       "open_panel: kv",
       "Brings that panel to the front."},
      {"highlight",
       ArgKind::kFields,
       {},
       0,
       0,
       {{"panel", ArgKind::kChoice, panels_as_strings(), 0, 0, true, "the panel"},
        {"element", ArgKind::kText, {}, 0, 0, true, "one of the panel's highlight elements"}},
       "highlight: {panel: kv, element: retained-bytes}",
       "Opens the panel and draws attention to one of its elements."},
  };
}

std::vector<MeasureSpec> make_measures() {
  return {
      {"kv_bytes", "bytes",
       "bytes holding the retained tokens of the learner's request at the current KV type"},
      {"kv_tokens", "tokens", "tokens the learner's request retains in the KV cache"},
      {"kv_allocated_bytes", "bytes",
       "bytes of the whole blocks allocated to the learner's request"},
      {"kv_bytes_per_token", "bytes",
       "bytes one retained token's keys and values take at the current KV type"},
      {"weight_bytes", "bytes", "bytes of the loaded model's weights"},
      {"prefill_ms", "ms", "time of the last prefill"},
      {"prefill_ms_per_token", "ms", "the last prefill's time per prompt token it computed"},
      {"prefill_tokens_per_s", "tokens/s", "prompt tokens processed per second in prefill"},
      {"decode_ms_per_token", "ms", "time per decode step of the last request"},
      {"decode_tokens_per_s", "tokens/s", "tokens generated per second while decoding"},
      {"achieved_gbs", "GB/s",
       "bytes moved (weights and KV) over step time, summed over the decode steps of the "
       "learner's request"},
      {"decode_flops_per_byte", "FLOP/byte",
       "FLOPs per byte moved (weights and KV) of the decode steps that made the learner's "
       "tokens: their arithmetic intensity"},
      {"decode_kv_bytes_per_step", "bytes",
       "KV bytes read per decode step, over the steps that made the learner's tokens (every "
       "request in the batch reads its own cache)"},
      {"memory_roof_gbs", "GB/s", "the device's measured memory bandwidth roof"},
      {"cache_roof_gbs", "GB/s", "the device's measured cache bandwidth roof"},
      {"compute_roof_gflops", "GFLOP/s", "the device's measured compute roof"},
      {"sweep_speedup_8", "x", "batch-8 throughput divided by batch-1 throughput (batch sweep)"},
      {"sweep_speedup_16", "x", "batch-16 throughput divided by batch-1 throughput (batch sweep)"},
      {"sweep_ms_per_1k_tokens_1", "ms",
       "machine time per 1,000 decode tokens at batch 1: 10^6 / its throughput (batch sweep)"},
      {"sweep_ms_per_1k_tokens_8", "ms",
       "machine time per 1,000 decode tokens at batch 8: 10^6 / its throughput (batch sweep)"},
      {"sweep_ms_per_1k_tokens_16", "ms",
       "machine time per 1,000 decode tokens at batch 16: 10^6 / its throughput (batch sweep)"},
      {"sweep_step_ms_1", "ms",
       "mean decode step time at batch 1: each request's wait per token (batch sweep)"},
      {"sweep_step_ms_8", "ms",
       "mean decode step time at batch 8: each request's wait per token (batch sweep)"},
      {"sweep_step_ms_16", "ms",
       "mean decode step time at batch 16: each request's wait per token (batch sweep)"},
      {"load_tokens_per_s", "tokens/s",
       "output tokens per second of the last staggered load: all its tokens over the time from "
       "the first arrival to the last token"},
      {"load_ttft_p50_ms", "ms",
       "the median time to first token of the last staggered load's requests, from each one's "
       "arrival"},
      {"load_steps", "steps", "engine steps the last staggered load took, prefill and decode"},
      {"load_mean_batch", "requests",
       "requests per step of the last staggered load, on average over its steps"},
      {"size_sweep_gbs", "GB/s",
       "the fitted slope of decode time against weight bytes (size sweep), as bandwidth"},
      {"size_sweep_gflops", "GFLOP/s",
       "the fitted slope of decode time against FLOPs per token (size sweep), as arithmetic "
       "rate"},
      {"decode_weight_bytes", "bytes",
       "weight bytes a decode step of the learner's request read, mean over those steps (every "
       "matrix, one embedding row per token)"},
      {"decode_step_ms", "ms",
       "time of a decode step of the learner's request, mean over those steps (the gaps between "
       "steps, which TPOT includes, left out)"},
      {"attention_ms_per_100_context", "ms",
       "how much a batch-1 decode step's attention time grew per 100 tokens of context (the "
       "medians of the shortest and longest thirds of the contexts, joined)"},
      {"decode_attention_ms", "ms", "attention time of a batch-1 decode step, mean over steps"},
      {"working_set_roof_gbs", "GB/s",
       "the bandwidth roof the model's weights are read under: the cache roof when they fit "
       "the last-level cache, else the memory roof"},
      {"ttft_ms", "ms", "time to first token of the last request"},
      {"tpot_ms", "ms", "time per output token of the last request"},
      {"class_tokens_per_s", "tokens/s",
       "tokens generated for every request (classmates too) from the learner's last request's "
       "arrival to its last token, per second"},
      {"evictions", "events",
       "times cached prefix blocks were evicted to hold new tokens during the experiment"},
      {"preemptions", "requests",
       "requests preempted (their blocks freed, recomputed later) during the experiment"},
      {"peak_batch", "requests",
       "the most requests that ran in one step of the experiment (its busiest step: of the "
       "steps with that many, the one whose KV blocks held the most)"},
      {"peak_paged_bytes", "bytes",
       "at the busiest step: the KV pool's blocks in use x bytes per block, what paging held"},
      {"peak_reserved_bytes", "bytes",
       "at the busiest step: its requests x the model's context x KV bytes per token, what "
       "reserving each request's maximum length would hold"},
      {"peak_paged_share", "%",
       "peak_paged_bytes / peak_reserved_bytes x 100: the share of the reservation that paging "
       "needed, at most the share that would have held keys and values"},
      {"pool_full_contexts", "requests",
       "full-context reservations the KV pool holds: pool blocks x block size / the model's "
       "context, rounded down"},
      {"peak_beyond_reservation", "requests",
       "requests of the busiest step beyond pool_full_contexts: those reserving would have "
       "kept waiting (0 when all fit)"},
      {"all_points_under_roofs", "true/false",
       "1 when every step on the roofline is at or under its roof, 0 when one is above"},
      {"variant_mean_kl", "nats",
       "the selected comparison row's mean KL divergence of next-token probabilities from "
       "the F32 baseline's (quant_compare, select_variant)"},
      {"variant_top1_agreement", "%",
       "the share of positions where the selected row's likeliest next token is the "
       "baseline's"},
      {"variant_prefill_speedup", "x",
       "the selected row's prefill tokens per second over the baseline's, same backend, same "
       "run"},
      {"variant_decode_speedup", "x",
       "the selected row's batch-1 decode tokens per second over the baseline's"},
      {"variant_tpot_p99_ms", "ms",
       "the selected row's p99 time per output token under the comparison's fixed load"},
      {"kv_sqnr_first_db", "dB",
       "SQNR of the first layer's Q8_0 cache against an F32 cache after the prompt "
       "(quant_compare)"},
      {"kv_sqnr_last_db", "dB", "the same for the last layer"},
      {"kv_rounding_sqnr_last_db", "dB",
       "the last layer's F32 keys and values rounded to Q8_0: its own rounding alone, nothing "
       "inherited from earlier layers"},
  };
}

std::vector<GeneratorSpec> make_generators() {
  const ParamSpec tokens{"tokens", ParamKind::kInteger, {}, 1, 1e6, true, {},
                         {},       "retained tokens"};
  const ParamSpec kv_type{"kv_type", ParamKind::kChoice,         kv_type_names(), 0, 0, true, {},
                          {},        "the KV cache element type"};
  const ParamSpec block_size{"block_size", ParamKind::kInteger,  {}, 1, 1024, false, "16",
                             {},           "tokens per KV block"};
  std::vector<std::string> weight_or_loaded = weight_type_names();
  weight_or_loaded.push_back("loaded");
  return {
      {"kv_bytes",
       {tokens, kv_type},
       "bytes",
       {"kv_dim", "row_bytes", "bytes_per_token"},
       "tokens x 2 (key and value) x layers x kv_heads x head_dim x bytes per element (4 for "
       "f32, 2 for f16, 34 per 32 elements for q8_0): serving::kv_bytes_per_token"},
      {"kv_allocated_bytes",
       {tokens, kv_type, block_size},
       "bytes",
       {"blocks", "bytes_per_block", "bytes_per_token", "kv_bytes"},
       "ceil(tokens / block_size) whole blocks x block_size x bytes per token: "
       "serving::blocks_for_tokens x serving::kv_bytes_per_block"},
      {"weight_bytes",
       {{"type",
         ParamKind::kChoice,
         weight_type_names(),
         0,
         0,
         true,
         {},
         {},
         "the weight type the matrices are stored in"}},
       "bytes",
       {"parameters"},
       "every matrix in that type (GGML's block sizes), norms and biases in f32, as "
       "servescope-cli quantize writes the file"},
      {"decode_floor_ms",
       {{"bandwidth_gbs",
         ParamKind::kNumber,
         {},
         0.01,
         1e5,
         true,
         {},
         "working_set_roof_gbs",
         "GB/s, or `measured`: the device's measured roof for the weights' working set (cache "
         "or main memory)"},
        {"type",
         ParamKind::kChoice,
         weight_or_loaded,
         0,
         0,
         false,
         "loaded",
         {},
         "the weight type (default: as loaded)"}},
       "ms",
       {"weight_bytes", "bandwidth_gbs"},
       "weight bytes / (bandwidth in bytes per second) x 1000: if a decode step read every "
       "weight once per token (a real one reads one embedding row, not the table)"},
      {"max_batch",
       {{"memory_mib", ParamKind::kInteger, {}, 1, 1e7, true, {}, {}, "memory for the model, MiB"},
        {"context", ParamKind::kInteger, {}, 1, 1e6, true, {}, {}, "tokens each request retains"},
        kv_type,
        block_size},
       "requests",
       {"weight_bytes", "memory_bytes", "free_bytes", "per_request_bytes"},
       "floor((memory - weight bytes) / (whole blocks for the context x bytes per block)): "
       "how many requests' KV caches fit beside the weights"},
  };
}

template <typename Spec>
const Spec* find_by_name(std::span<const Spec> specs, std::string_view name) {
  const auto it =
      std::find_if(specs.begin(), specs.end(), [&](const Spec& s) { return s.name == name; });
  return it == specs.end() ? nullptr : &*it;
}


template <typename Text>
std::string join_choices(std::span<const Text> allowed) {
  std::string out;
  for (size_t i = 0; i < allowed.size(); ++i) {
    if (i > 0) out += i + 1 == allowed.size() ? " or " : ", ";
    out += allowed[i];
  }
  return out;
}

}  // namespace

std::vector<std::string> timing_model_sizes() {
  std::vector<std::string> sizes;
  for (const eval::RandomModelPreset& preset : eval::random_model_presets()) {
    sizes.emplace_back(preset.name);
  }
  return sizes;
}

std::vector<std::string> model_choices() {
  std::vector<std::string> choices = {"bundled"};
  for (const std::string& size : timing_model_sizes()) choices.push_back("timing:" + size);
  return choices;
}

std::span<const ActionSpec> action_specs() {
  static const std::vector<ActionSpec> specs = make_actions();
  return specs;
}

const ActionSpec* find_action(std::string_view name) { return find_by_name(action_specs(), name); }

const FieldSpec* find_field(const ActionSpec& action, std::string_view field) {
  return find_by_name(std::span<const FieldSpec>(action.fields), field);
}

std::span<const MeasureSpec> measure_specs() {
  static const std::vector<MeasureSpec> specs = make_measures();
  return specs;
}

const MeasureSpec* find_measure(std::string_view name) {
  return find_by_name(measure_specs(), name);
}

std::span<const std::string_view> panel_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> keys;
    for (const PanelElements& entry : panel_elements()) keys.push_back(entry.panel);
    return keys;
  }();
  return names;
}

std::span<const std::string_view> highlight_elements(std::string_view panel) {
  for (const PanelElements& entry : panel_elements()) {
    if (entry.panel == panel) return entry.elements;
  }
  return {};
}

std::span<const PlaceholderSpec> model_placeholders() {
  static const std::array<PlaceholderSpec, 12> specs = {{
      {"name", "the model's name (general.name, else its file name)"},
      {"layers", "transformer layers"},
      {"heads", "query heads"},
      {"kv_heads", "key-value heads (fewer than heads with grouped-query attention)"},
      {"head_dim", "elements per head"},
      {"dim", "embedding width"},
      {"ffn_dim", "the feed-forward layer's hidden width (gate, up and down matrices)"},
      {"vocab", "vocabulary size"},
      {"output", "where the logits come from: a separate output matrix, or the embedding "
                 "table shared (tied)"},
      {"context", "the longest context the model was trained for, in tokens"},
      {"weight_bytes", "bytes of the weights as loaded"},
      {"weight_type", "the weights' element type as loaded (f32, f16, q8_0, q4_0 or mixed)"},
  }};
  return specs;
}

bool is_model_placeholder(std::string_view name) {
  return find_by_name(model_placeholders(), name) != nullptr;
}

std::span<const GeneratorSpec> generator_specs() {
  static const std::vector<GeneratorSpec> specs = make_generators();
  return specs;
}

const GeneratorSpec* find_generator(std::string_view name) {
  return find_by_name(generator_specs(), name);
}

const ParamSpec* find_param(const GeneratorSpec& generator, std::string_view name) {
  return find_by_name(std::span<const ParamSpec>(generator.params), name);
}

std::vector<std::string> kv_type_names() { return {"f32", "f16", "q8_0"}; }

std::vector<std::string> weight_type_names() { return {"f32", "f16", "q8_0", "q4_0"}; }

std::string one_of(std::span<const std::string> allowed) { return join_choices(allowed); }

std::string one_of(std::span<const std::string_view> allowed) { return join_choices(allowed); }

}  // namespace servescope::lessons
