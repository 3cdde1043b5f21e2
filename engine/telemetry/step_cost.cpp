#include "engine/telemetry/step_cost.h"

#include <algorithm>

namespace servescope::telemetry {

int64_t matmul_parameters_per_layer(const model::ModelConfig& c) {
  const int64_t q_dim = c.n_heads * c.head_dim;
  const int64_t attention = c.dim * (q_dim + 2 * c.kv_dim()) + q_dim * c.dim;
  const int64_t ffn_matrices =
      c.architecture == model::Architecture::kGpt2 ? 2 : 3;  // gated FFNs: 3
  return attention + ffn_matrices * c.dim * c.ffn_dim;
}

uint64_t weight_bytes_read(const model::ModelConfig& config, uint64_t weight_bytes,
                           int64_t new_tokens) {
  if (new_tokens <= 0) return 0;
  const auto tokens = static_cast<uint64_t>(new_tokens);
  // A table whose rows are gathered: all of it is in weight_bytes, the gathered rows are read.
  const auto gathered = [&](uint64_t table_rows, uint64_t row_bytes) {
    const uint64_t table = table_rows * row_bytes;
    const uint64_t read = std::min(tokens, table_rows) * row_bytes;
    weight_bytes = weight_bytes >= table ? weight_bytes - table + read : weight_bytes;
  };
  if (!config.tied_output) {
    gathered(static_cast<uint64_t>(config.vocab_size), config.token_embd_row_bytes);
  }
  gathered(static_cast<uint64_t>(config.position_embd_rows), config.position_embd_row_bytes);
  return weight_bytes;
}

StepCost estimate_step_cost(const model::ModelConfig& config, uint64_t weight_bytes,
                            uint64_t kv_bytes_per_token, std::span<const SequenceWork> batch) {
  const auto layers = static_cast<double>(config.n_layers);
  const auto per_layer = static_cast<double>(matmul_parameters_per_layer(config));
  const auto attention_per_context_token =
      4.0 * static_cast<double>(config.n_heads * config.head_dim) * layers;
  const auto logits_per_row = 2.0 * static_cast<double>(config.dim * config.vocab_size);

  StepCost cost;
  int64_t new_tokens = 0;
  for (const SequenceWork& s : batch) new_tokens += s.new_tokens;
  cost.weight_bytes_read = weight_bytes_read(config, weight_bytes, new_tokens);
  for (const SequenceWork& s : batch) {
    const auto n = static_cast<double>(s.new_tokens);
    const auto c = static_cast<double>(s.cached_tokens);
    cost.matmul_flops += 2.0 * per_layer * layers * n;
    if (s.samples_logits) cost.logits_flops += logits_per_row;
    // sum over i = 1..n of (c + i)
    cost.attention_flops += attention_per_context_token * (n * c + n * (n + 1.0) / 2.0);
    const auto context = static_cast<uint64_t>(s.cached_tokens + s.new_tokens);
    cost.kv_bytes_read += kv_bytes_per_token * context;
    cost.kv_bytes_written += kv_bytes_per_token * static_cast<uint64_t>(s.new_tokens);
  }
  return cost;
}

}  // namespace servescope::telemetry
