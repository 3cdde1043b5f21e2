#include "engine/model/transformer.h"

#include <numeric>
#include <string>

#include "engine/core/error.h"

namespace servescope::model {

using compute::BufferPurpose;
using compute::Tensor;

KvCache create_kv_cache(const ModelConfig& config, compute::Backend& backend, int64_t capacity) {
  KvCache cache;
  cache.capacity = capacity;
  for (int64_t l = 0; l < config.n_layers; ++l) {
    cache.keys.push_back(backend.create_tensor(capacity, config.kv_dim(), BufferPurpose::kKvCache));
    cache.values.push_back(
        backend.create_tensor(capacity, config.kv_dim(), BufferPurpose::kKvCache));
  }
  return cache;
}

Transformer::Transformer(ModelConfig config, ModelWeights weights, compute::Backend& backend)
    : config_(std::move(config)), weights_(std::move(weights)), backend_(backend) {}

Tensor Transformer::activation(int64_t rows, int64_t cols) {
  return backend_.create_tensor(rows, cols, BufferPurpose::kActivations);
}

void Transformer::check_input(std::span<const int32_t> tokens, const KvCache& cache) const {
  if (tokens.empty()) throw InputError("no tokens to run");
  for (const int32_t id : tokens) {
    if (id < 0 || id >= config_.vocab_size) {
      throw InputError("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                       std::to_string(config_.vocab_size - 1) + ")");
    }
  }
  const int64_t end = cache.length + static_cast<int64_t>(tokens.size());
  const int64_t limit = std::min(cache.capacity, config_.context_length);
  if (end > limit) {
    throw InputError("sequence of " + std::to_string(end) + " tokens exceeds the context of " +
                     std::to_string(limit) + " tokens");
  }
}

std::vector<float> Transformer::forward(std::span<const int32_t> tokens, KvCache& cache,
                                        bool all_positions) {
  check_input(tokens, cache);
  const auto n = static_cast<int64_t>(tokens.size());
  std::vector<int32_t> positions(tokens.size());
  std::iota(positions.begin(), positions.end(), static_cast<int32_t>(cache.length));

  // x: the residual stream, one row per token.
  Tensor x = activation(n, config_.dim);
  backend_.embed(weights_.token_embd, tokens, x);
  if (config_.architecture == Architecture::kGpt2) {
    Tensor pos = activation(n, config_.dim);
    backend_.embed(weights_.position_embd, positions, pos);
    backend_.add(x, pos);
  }

  for (size_t l = 0; l < weights_.layers.size(); ++l) {
    attention_block(weights_.layers[l], static_cast<int64_t>(l), x, positions, cache);
    feed_forward_block(weights_.layers[l], x);
  }
  cache.length += n;

  // Only the rows whose logits are wanted go through the final norm and the output matrix.
  const Tensor wanted = all_positions ? x : x.row_range(n - 1, 1);
  Tensor normed = activation(wanted.rows, config_.dim);
  norm(wanted, weights_.output_norm, weights_.output_norm_bias, normed);
  Tensor logits = activation(wanted.rows, config_.vocab_size);
  backend_.matmul(normed, weights_.output, nullptr, logits);
  return backend_.read(logits);
}

void Transformer::attention_block(const LayerWeights& layer, int64_t layer_index, Tensor& x,
                                  std::span<const int32_t> positions, KvCache& cache) {
  const int64_t n = x.rows;
  const int64_t q_dim = config_.n_heads * config_.head_dim;
  Tensor h = activation(n, config_.dim);
  norm(x, layer.attn_norm, layer.attn_norm_bias, h);

  Tensor q, k, v;
  if (config_.architecture == Architecture::kLlama) {
    q = activation(n, q_dim);
    k = activation(n, config_.kv_dim());
    v = activation(n, config_.kv_dim());
    backend_.matmul(h, layer.wq, nullptr, q);
    backend_.matmul(h, layer.wk, nullptr, k);
    backend_.matmul(h, layer.wv, nullptr, v);
    backend_.rope(q, config_.head_dim, positions, config_.rope_freq_base);
    backend_.rope(k, config_.head_dim, positions, config_.rope_freq_base);
  } else {  // gpt2: one fused projection, columns q | k | v
    Tensor qkv = activation(n, 3 * config_.dim);
    backend_.matmul(h, layer.wqkv, &layer.bqkv, qkv);
    q = qkv.columns(0, config_.dim);
    k = qkv.columns(config_.dim, config_.dim);
    v = qkv.columns(2 * config_.dim, config_.dim);
  }

  // The new tokens' keys and values join the cache; queries attend over all of it.
  backend_.copy_rows(k, cache.keys[layer_index], cache.length);
  backend_.copy_rows(v, cache.values[layer_index], cache.length);
  Tensor attended = activation(n, q_dim);
  const compute::AttentionShape shape{config_.n_heads, config_.n_kv_heads, config_.head_dim};
  backend_.attention(q, cache.keys[layer_index], cache.values[layer_index], shape, cache.length,
                     attended);

  Tensor out = activation(n, config_.dim);
  backend_.matmul(attended, layer.wo, layer.bo.buffer ? &layer.bo : nullptr, out);
  backend_.add(x, out);
}

void Transformer::feed_forward_block(const LayerWeights& layer, Tensor& x) {
  const int64_t n = x.rows;
  Tensor h = activation(n, config_.dim);
  norm(x, layer.ffn_norm, layer.ffn_norm_bias, h);

  Tensor hidden = activation(n, config_.ffn_dim);
  if (config_.architecture == Architecture::kLlama) {  // SwiGLU: silu(h Wg) * (h Wu)
    Tensor up = activation(n, config_.ffn_dim);
    backend_.matmul(h, layer.w_gate, nullptr, hidden);
    backend_.matmul(h, layer.w_up, nullptr, up);
    backend_.silu_mul(hidden, up, hidden);
  } else {  // GELU MLP
    backend_.matmul(h, layer.w_up, &layer.b_up, hidden);
    backend_.gelu(hidden);
  }

  Tensor out = activation(n, config_.dim);
  backend_.matmul(hidden, layer.w_down, layer.b_down.buffer ? &layer.b_down : nullptr, out);
  backend_.add(x, out);
}

void Transformer::norm(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out) {
  if (config_.architecture == Architecture::kLlama) {
    backend_.rms_norm(x, weight, config_.norm_eps, out);
  } else {
    backend_.layer_norm(x, weight, bias, config_.norm_eps, out);
  }
}

}  // namespace servescope::model
