#include "app/remote/server_metrics.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace servescope::remote {
namespace {

// The sum over every label set of the first of `names` the text has; nullopt when it has none.
std::optional<double> total(const std::vector<PrometheusSample>& samples,
                            std::initializer_list<std::string_view> names) {
  for (const std::string_view name : names) {
    std::optional<double> sum;
    for (const PrometheusSample& s : samples) {
      if (s.name == name) sum = sum.value_or(0.0) + s.value;
    }
    if (sum) return sum;
  }
  return std::nullopt;
}

std::optional<HistogramTotals> histogram(const std::vector<PrometheusSample>& samples,
                                         std::initializer_list<std::string_view> names) {
  for (const std::string_view name : names) {
    const std::string base(name);
    const std::optional<double> sum = total(samples, {base + "_sum"});
    const std::optional<double> count = total(samples, {base + "_count"});
    if (sum && count) return HistogramTotals{*sum, *count};
  }
  return std::nullopt;
}

bool has_prefix(const std::vector<PrometheusSample>& samples, std::string_view prefix) {
  for (const PrometheusSample& s : samples) {
    if (s.name.starts_with(prefix)) return true;
  }
  return false;
}

}  // namespace

std::string_view server_kind_name(ServerKind kind) {
  return kind == ServerKind::kVllm ? "vLLM" : "llama.cpp";
}

ServerMetrics read_server_metrics(std::string_view text) {
  const std::vector<PrometheusSample> samples = parse_prometheus_text(text);
  ServerMetrics m;
  if (has_prefix(samples, "llamacpp:")) {
    m.kind = ServerKind::kLlamaCpp;
    m.requests_running = total(samples, {"llamacpp:requests_processing"});
    m.requests_waiting = total(samples, {"llamacpp:requests_deferred"});
    m.kv_usage = total(samples, {"llamacpp:kv_cache_usage_ratio"});  // older releases only
    m.prompt_tokens_total = total(samples, {"llamacpp:prompt_tokens_total"});
    m.prompt_tokens_cached_total = total(samples, {"llamacpp:prompt_tokens_cached_total"});
    m.generated_tokens_total = total(samples, {"llamacpp:tokens_predicted_total"});
    m.decode_calls_total = total(samples, {"llamacpp:n_decode_total"});
    return m;
  }
  if (has_prefix(samples, "vllm:")) {
    m.kind = ServerKind::kVllm;
    m.requests_running = total(samples, {"vllm:num_requests_running"});
    m.requests_waiting = total(samples, {"vllm:num_requests_waiting"});
    m.kv_usage = total(samples, {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"});
    m.prompt_tokens_total = total(samples, {"vllm:prompt_tokens_total"});
    m.generated_tokens_total = total(samples, {"vllm:generation_tokens_total"});
    m.preemptions_total = total(samples, {"vllm:num_preemptions_total"});
    m.ttft_s = histogram(samples, {"vllm:time_to_first_token_seconds"});
    m.tpot_s = histogram(samples,
                         {"vllm:time_per_output_token_seconds", "vllm:inter_token_latency_seconds"});
    return m;
  }
  throw MetricsFormatError(
      "the metrics name neither llama.cpp's (llamacpp:...) nor vLLM's (vllm:...) figures: "
      "not a serving engine ServeScope reads");
}

SlotsReport read_llama_slots(std::string_view json_text) {
  const nlohmann::json slots = nlohmann::json::parse(json_text, nullptr, false);
  const auto refuse = [] [[noreturn]] () {
    throw MetricsFormatError("/slots is not llama-server's slot list (an array of slots with n_ctx)");
  };
  if (!slots.is_array()) refuse();
  SlotsReport report;
  for (const nlohmann::json& slot : slots) {
    if (!slot.is_object() || !slot.contains("n_ctx") || !slot["n_ctx"].is_number()) refuse();
    ++report.slots;
    report.context_tokens += slot["n_ctx"].get<int64_t>();
    if (slot.value("is_processing", false)) ++report.processing;
    if (slot.contains("n_prompt_tokens") && slot["n_prompt_tokens"].is_number()) {
      report.tokens_held += slot["n_prompt_tokens"].get<int64_t>();  // prompt and output so far
    }
  }
  return report;
}

}  // namespace servescope::remote
