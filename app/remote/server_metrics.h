// What a serving engine reports about itself on /metrics, in ServeScope's terms: llama.cpp's
// llama-server (started with --metrics; names "llamacpp:...") and vLLM (names "vllm:...",
// versions 0.6 to 0.10: gpu_cache_usage_perc until V1 renamed it kv_cache_usage_perc, and
// time_per_output_token_seconds beside V1's inter_token_latency_seconds). Every figure here is
// "reported by the server"; what ServeScope measures itself comes from the client's clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "app/remote/prometheus_text.h"

namespace servescope::remote {

enum class ServerKind { kLlamaCpp, kVllm };

// "llama.cpp", "vLLM".
std::string_view server_kind_name(ServerKind kind);

// A histogram's running totals (its _sum and _count samples).
struct HistogramTotals {
  double sum = 0.0;
  double count = 0.0;
  double mean() const { return count > 0.0 ? sum / count : 0.0; }
};

struct ServerMetrics {
  ServerKind kind = ServerKind::kLlamaCpp;
  // Gauges, summed over label sets (several engines, several models).
  std::optional<double> requests_running;  // llama.cpp requests_processing, vLLM num_requests_running
  std::optional<double> requests_waiting;  // llama.cpp requests_deferred, vLLM num_requests_waiting
  std::optional<double> kv_usage;          // fraction of KV blocks in use, 0..1 (vLLM)
  // Counters since the server started.
  std::optional<double> prompt_tokens_total;     // prompt tokens computed (llama.cpp: not cached)
  std::optional<double> prompt_tokens_cached_total;  // llama.cpp: found in its prompt cache
  std::optional<double> generated_tokens_total;  // llama.cpp tokens_predicted_total
  std::optional<double> preemptions_total;       // vLLM num_preemptions_total
  std::optional<double> decode_calls_total;      // llama.cpp n_decode_total: batched steps
  // Latency histograms (vLLM), seconds.
  std::optional<HistogramTotals> ttft_s;
  std::optional<HistogramTotals> tpot_s;
};

// MetricsFormatError when the text is not Prometheus text or names neither llama.cpp's nor
// vLLM's metrics (another kind of server).
ServerMetrics read_server_metrics(std::string_view text);

// llama-server's /slots (started with --slots): each slot keeps its own context of n_ctx
// tokens, set aside up front whether a request fills it or not (not paged: the lesson's
// "reservation"), and holds the tokens of its last request in it.
struct SlotsReport {
  int64_t slots = 0;
  int64_t processing = 0;      // slots running a request now
  int64_t context_tokens = 0;  // all slots' n_ctx: the KV cache set aside
  int64_t tokens_held = 0;     // in all slots (a finished request's stay until the slot is reused)
  double usage() const {
    return context_tokens > 0
               ? static_cast<double>(tokens_held) / static_cast<double>(context_tokens)
               : 0.0;
  }
};

// MetricsFormatError for an answer that is not llama-server's slot list.
SlotsReport read_llama_slots(std::string_view json_text);

}  // namespace servescope::remote
