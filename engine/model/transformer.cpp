#include "engine/model/transformer.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "engine/core/error.h"

namespace servescope::model {

using compute::BufferPurpose;
using compute::Tensor;

PagedKvCache create_paged_kv_cache(const ModelConfig& config, compute::Backend& backend,
                                   gguf::GgmlType type, int64_t slots) {
  PagedKvCache cache;
  cache.type = type;
  cache.slots = slots;
  for (int64_t l = 0; l < config.n_layers; ++l) {
    cache.layers.push_back(backend.create_kv_store(type, slots, config.kv_dim()));
  }
  return cache;
}

KvCache create_kv_cache(const ModelConfig& config, compute::Backend& backend, int64_t capacity,
                        gguf::GgmlType type) {
  KvCache cache;
  cache.storage = create_paged_kv_cache(config, backend, type, capacity);
  cache.slots.resize(static_cast<size_t>(capacity));
  std::iota(cache.slots.begin(), cache.slots.end(), 0);
  cache.capacity = capacity;
  return cache;
}

Transformer::Transformer(ModelConfig config, ModelWeights weights, compute::Backend& backend)
    : config_(std::move(config)), weights_(std::move(weights)), backend_(backend) {
  for (int64_t l = 0; l < config_.n_layers; ++l) {
    const bool local = config_.is_local_layer(l);
    compute::RopeSpec rope;
    rope.neox = config_.rope_neox;
    rope.freq_factors = weights_.rope_freq_factors;
    // Local (sliding-window) layers have their own base and scale (gemma3: 10000, unscaled).
    rope.freq_base = local ? config_.rope_freq_base_local : config_.rope_freq_base;
    rope.freq_scale = local ? config_.rope_freq_scale_local : config_.rope_freq_scale;
    layer_rope_.push_back(std::move(rope));
    compute::AttentionShape shape{config_.n_heads, config_.n_kv_heads, config_.head_dim};
    shape.scale = config_.attention_scale;
    shape.softcap = config_.attn_softcap;
    shape.window = local ? config_.sliding_window : 0;
    layer_attention_.push_back(shape);
  }
  reserve_activations(std::min<int64_t>(config_.context_length, kReservedPrefillTokens));
}

void Transformer::reserve_activations(int64_t tokens) {
  // The tensors one layer of a prefill holds at once (residual stream, norms, q|k|v, attention
  // out, feed-forward in and out), created and dropped here, at load.
  const int64_t q_dim = config_.n_heads * config_.head_dim;
  const int64_t ffn_cols =
      config_.architecture == Architecture::kGpt2 ? config_.ffn_dim : 2 * config_.ffn_dim;
  std::vector<Tensor> held;
  for (const int64_t cols : {config_.dim, config_.dim, config_.dim, config_.dim, config_.dim,
                             config_.dim, q_dim + 2 * config_.kv_dim(), q_dim, ffn_cols}) {
    held.push_back(activation(tokens, cols));
  }
}

void Transformer::set_kv_type(gguf::GgmlType type) {
  compute::check_kv_store_shape(type, 1, config_.kv_dim());
  kv_type_ = type;
}

KvCache Transformer::new_cache(int64_t capacity) {
  return create_kv_cache(config_, backend_, capacity, kv_type_);
}

void Transformer::set_attention_capture(std::optional<AttentionCapture> capture) {
  if (capture && (capture->layer < -1 || capture->layer >= config_.n_layers)) {
    throw InputError("attention capture: layer " + std::to_string(capture->layer) +
                     " is outside the model (0.." + std::to_string(config_.n_layers - 1) +
                     ", or -1 for all)");
  }
  if (capture && (capture->head < -1 || capture->head >= config_.n_heads)) {
    throw InputError("attention capture: head " + std::to_string(capture->head) +
                     " is outside the model (0.." + std::to_string(config_.n_heads - 1) +
                     ", or -1 for all)");
  }
  capture_ = capture;
  captured_.clear();
}

bool Transformer::captures_layer(int64_t layer) const {
  return capture_ && (capture_->layer == -1 || capture_->layer == layer);
}

void Transformer::collect_captured(std::span<const std::pair<int64_t, Tensor>> captures,
                                   const std::vector<int32_t>& sequences,
                                   const std::vector<int32_t>& positions) {
  for (const auto& [layer, tensor] : captures) {
    const std::vector<float> all = backend_.read(tensor);  // [rows * n_heads x cols]
    for (int64_t h = 0; h < config_.n_heads; ++h) {
      if (capture_->head != -1 && capture_->head != h) continue;
      AttentionWeights weights{layer, h, sequences, positions, {}};
      for (size_t i = 0; i < positions.size(); ++i) {
        const float* row =
            all.data() + (static_cast<int64_t>(i) * config_.n_heads + h) * tensor.cols;
        weights.rows.emplace_back(row, row + positions[i] + 1);
      }
      captured_.push_back(std::move(weights));
    }
  }
}

Tensor Transformer::activation(int64_t rows, int64_t cols) {
  return backend_.create_tensor(rows, cols, BufferPurpose::kActivations);
}

void Transformer::check_input(const SequenceStep& step, const PagedKvCache& cache) const {
  if (step.tokens.empty()) throw InputError("no tokens to run");
  for (const int32_t id : step.tokens) {
    if (id < 0 || id >= config_.vocab_size) {
      throw InputError("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                       std::to_string(config_.vocab_size - 1) + ")");
    }
  }
  const int64_t end = step.start + static_cast<int64_t>(step.tokens.size());
  if (step.start < 0 || end > config_.context_length) {
    throw InputError("sequence of " + std::to_string(end) + " tokens exceeds the context of " +
                     std::to_string(config_.context_length) + " tokens");
  }
  if (static_cast<int64_t>(step.slots.size()) < end) {
    throw InputError("sequence of " + std::to_string(end) + " tokens has KV slots for only " +
                     std::to_string(step.slots.size()));
  }
  for (int64_t t = 0; t < end; ++t) {
    const int32_t slot = step.slots[static_cast<size_t>(t)];
    if (slot < 0 || slot >= cache.slots) {
      throw InputError("KV slot " + std::to_string(slot) + " is outside the cache (0.." +
                       std::to_string(cache.slots - 1) + ")");
    }
  }
}

std::vector<float> Transformer::forward(std::span<const int32_t> tokens, KvCache& cache,
                                        bool all_positions) {
  const int64_t end = cache.length + static_cast<int64_t>(tokens.size());
  if (end > cache.capacity) {
    throw InputError("sequence of " + std::to_string(end) + " tokens exceeds the context of " +
                     std::to_string(std::min(cache.capacity, config_.context_length)) + " tokens");
  }
  const SequenceStep step{tokens, cache.length, cache.slots,
                          all_positions ? LogitRows::kAll : LogitRows::kLast};
  std::vector<float> logits = forward_batch({&step, 1}, cache.storage);
  cache.length = end;
  return logits;
}

std::vector<float> Transformer::forward_batch(std::span<const SequenceStep> batch,
                                              PagedKvCache& cache) {
  if (batch.empty()) throw InputError("no sequences to run");
  std::vector<int32_t> tokens;
  std::vector<int32_t> positions;
  std::vector<int32_t> sequences;  // the batch index of each new token's sequence
  std::vector<int32_t> new_slots;  // where each new token's keys and values go
  compute::AttentionBatch attention;
  for (const SequenceStep& step : batch) {
    check_input(step, cache);
    const auto offset = static_cast<int32_t>(attention.slot_map.size());
    const int64_t end = step.start + static_cast<int64_t>(step.tokens.size());
    attention.slot_map.insert(attention.slot_map.end(), step.slots.begin(),
                              step.slots.begin() + end);
    tokens.insert(tokens.end(), step.tokens.begin(), step.tokens.end());
    for (int64_t p = step.start; p < end; ++p) {
      positions.push_back(static_cast<int32_t>(p));
      sequences.push_back(static_cast<int32_t>(&step - batch.data()));
      attention.context_offsets.push_back(offset);
      new_slots.push_back(step.slots[static_cast<size_t>(p)]);
    }
  }
  attention.positions = positions;
  const auto n = static_cast<int64_t>(tokens.size());

  // x: the residual stream, one row per token of every sequence; residual: a block output
  // (or GPT-2's position embeddings) still to be added to x, which the next norm does.
  Tensor x = activation(n, config_.dim);
  std::optional<Tensor> residual;
  backend_.set_span_layer(-1);  // embeddings: before the layers
  backend_.embed(weights_.token_embd, tokens, x);
  if (config_.embedding_scale > 0.0f) backend_.scale(x, config_.embedding_scale);
  if (config_.architecture == Architecture::kGpt2) {
    residual = activation(n, config_.dim);
    backend_.embed(weights_.position_embd, positions, *residual);
  }

  // Opt-in: (layer, tensor) for each layer whose attention weights are captured.
  std::vector<std::pair<int64_t, Tensor>> captures;
  const int32_t longest = *std::max_element(positions.begin(), positions.end()) + 1;
  captured_.clear();
  for (size_t l = 0; l < weights_.layers.size(); ++l) {
    const LayerWeights& layer = weights_.layers[l];
    Tensor* weights = nullptr;
    if (captures_layer(static_cast<int64_t>(l))) {
      captures.emplace_back(l, activation(n * config_.n_heads, longest));
      weights = &captures.back().second;
    }
    backend_.set_span_layer(static_cast<int64_t>(l));
    Tensor h = activation(n, config_.dim);
    add_norm(x, residual ? &*residual : nullptr, layer.attn_norm, layer.attn_norm_bias, h);
    Tensor attended = attention_block(l, cache.layers[l], h, attention, new_slots, weights);
    if (config_.post_norms) attended = post_norm(attended, layer.post_attn_norm);
    Tensor h_ffn = activation(n, config_.dim);
    add_norm(x, &attended, layer.ffn_norm, layer.ffn_norm_bias, h_ffn);
    residual = feed_forward_block(layer, h_ffn);
    if (config_.post_norms) residual = post_norm(*residual, layer.post_ffn_norm);
  }
  backend_.set_span_layer(-1);

  // Only the rows whose logits are wanted get the last residual, the final norm and the
  // output matrix.
  const std::vector<int32_t> wanted = logit_rows(batch);
  std::vector<float> logits;
  if (!wanted.empty()) {
    Tensor wanted_x = rows_of(x, wanted);
    const std::optional<Tensor> wanted_residual =
        residual ? std::optional(rows_of(*residual, wanted)) : std::nullopt;
    Tensor normed = activation(wanted_x.rows, config_.dim);
    add_norm(wanted_x, wanted_residual ? &*wanted_residual : nullptr, weights_.output_norm,
             weights_.output_norm_bias, normed);
    Tensor out = activation(wanted_x.rows, config_.vocab_size);
    backend_.matmul(normed, weights_.output, nullptr, out);
    if (config_.final_softcap > 0.0f) backend_.soft_cap(out, config_.final_softcap);
    logits = backend_.read(out);
  }
  collect_captured(captures, sequences, positions);
  return logits;
}

std::vector<int32_t> Transformer::logit_rows(std::span<const SequenceStep> batch) {
  std::vector<int32_t> rows;
  int32_t row = 0;
  for (const SequenceStep& step : batch) {
    const auto n = static_cast<int32_t>(step.tokens.size());
    if (step.logits == LogitRows::kAll) {
      for (int32_t i = 0; i < n; ++i) rows.push_back(row + i);
    } else if (step.logits == LogitRows::kLast) {
      rows.push_back(row + n - 1);
    }
    row += n;
  }
  return rows;
}

Tensor Transformer::rows_of(const Tensor& t, std::span<const int32_t> rows) {
  const auto count = static_cast<int64_t>(rows.size());
  if (rows.back() - rows.front() + 1 == count) return t.row_range(rows.front(), count);
  Tensor gathered = activation(count, t.cols);
  backend_.gather_rows(t, rows, gathered);
  return gathered;
}

Tensor Transformer::attention_block(size_t layer_index, compute::KvStore& kv, const Tensor& h,
                                    const compute::AttentionBatch& batch,
                                    std::span<const int32_t> new_slots, Tensor* weights) {
  const LayerWeights& layer = weights_.layers[layer_index];
  const int64_t n = h.rows;
  const int64_t q_dim = config_.n_heads * config_.head_dim;

  // One product for q | k | v (llama's three matrices are fused at load time); then views.
  const int64_t kv_dim = config_.kv_dim();
  Tensor qkv = activation(n, q_dim + 2 * kv_dim);
  project(h, layer.wqkv, layer.bqkv.buffer ? &layer.bqkv : nullptr, qkv);
  Tensor q = qkv.columns(0, q_dim);
  Tensor k = qkv.columns(q_dim, kv_dim);
  const Tensor v = qkv.columns(q_dim + kv_dim, kv_dim);
  if (config_.qk_norm) {  // gemma3: each head's query and key RMS-normed before RoPE
    backend_.rms_norm_heads(q, layer.q_norm, config_.head_dim, config_.norm_eps);
    backend_.rms_norm_heads(k, layer.k_norm, config_.head_dim, config_.norm_eps);
  }
  if (config_.uses_rope()) {
    backend_.rope_qk(q, k, config_.head_dim, batch.positions, layer_rope_[layer_index]);
  }

  // The new tokens' keys and values join the cache; each query attends over its own sequence.
  backend_.store_kv(k, v, new_slots, kv);
  Tensor attended = activation(n, q_dim);
  backend_.attention(q, kv, layer_attention_[layer_index], batch, attended, weights);

  Tensor out = activation(n, config_.dim);
  backend_.matmul(attended, layer.wo, layer.bo.buffer ? &layer.bo : nullptr, out);
  return out;
}

Tensor Transformer::feed_forward_block(const LayerWeights& layer, const Tensor& h) {
  const int64_t n = h.rows;
  Tensor hidden;
  if (config_.architecture != Architecture::kGpt2) {
    // SwiGLU: silu(h Wg) * (h Wu); gemma's GeGLU takes gelu of the gate instead.
    Tensor gate_up = activation(n, 2 * config_.ffn_dim);
    project(h, layer.w_gate_up, nullptr, gate_up);
    hidden = gate_up.columns(0, config_.ffn_dim);  // the gate is overwritten in place
    const Tensor up = gate_up.columns(config_.ffn_dim, config_.ffn_dim);
    if (config_.gelu_gate) {
      backend_.gelu_mul(hidden, up, hidden);
    } else {
      backend_.silu_mul(hidden, up, hidden);
    }
  } else {  // GELU MLP
    hidden = activation(n, config_.ffn_dim);
    backend_.matmul(h, layer.w_up, &layer.b_up, hidden);
    backend_.gelu(hidden);
  }

  Tensor out = activation(n, config_.dim);
  backend_.matmul(hidden, layer.w_down, layer.b_down.buffer ? &layer.b_down : nullptr, out);
  return out;
}

void Transformer::project(const Tensor& x, const FusedMatrix& w, const Tensor* bias, Tensor& out) {
  // Normally one part; a file storing the parts in different types gets one product each.
  int64_t first = 0;
  for (const compute::WeightMatrix& part : w.parts) {
    Tensor columns = out.columns(first, part.rows);
    const Tensor part_bias = bias != nullptr ? bias->columns(first, part.rows) : Tensor{};
    backend_.matmul(x, part, bias != nullptr ? &part_bias : nullptr, columns);
    first += part.rows;
  }
}

Tensor Transformer::post_norm(const Tensor& block_out, const Tensor& weight) {
  Tensor normed = activation(block_out.rows, block_out.cols);
  backend_.rms_norm(block_out, weight, config_.norm_eps, normed);
  return normed;
}

void Transformer::add_norm(Tensor& x, const Tensor* residual, const Tensor& weight,
                           const Tensor& bias, Tensor& out) {
  const bool llama = config_.architecture != Architecture::kGpt2;  // RMSNorm
  if (residual == nullptr) {
    if (llama) {
      backend_.rms_norm(x, weight, config_.norm_eps, out);
    } else {
      backend_.layer_norm(x, weight, bias, config_.norm_eps, out);
    }
  } else if (llama) {
    backend_.add_rms_norm(x, *residual, weight, config_.norm_eps, out);
  } else {
    backend_.add_layer_norm(x, *residual, weight, bias, config_.norm_eps, out);
  }
}

}  // namespace servescope::model
