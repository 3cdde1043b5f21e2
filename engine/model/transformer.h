// The transformer forward pass, written once against compute::Backend for both
// architectures. Read `Transformer::forward` top to bottom: it is the whole model.
#pragma once

#include <span>
#include <vector>

#include "engine/compute/backend.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"

namespace servescope::model {

// Keys and values of one sequence, contiguous per layer: row t holds token t's
// [n_kv_heads * head_dim] key (or value).
struct KvCache {
  std::vector<compute::Tensor> keys;    // per layer [capacity x kv_dim]
  std::vector<compute::Tensor> values;  // per layer [capacity x kv_dim]
  int64_t capacity = 0;                 // tokens
  int64_t length = 0;                   // tokens stored so far (= position of the next token)
};

KvCache create_kv_cache(const ModelConfig& config, compute::Backend& backend, int64_t capacity);

class Transformer {
 public:
  Transformer(ModelConfig config, ModelWeights weights, compute::Backend& backend);

  // Runs `tokens` at positions cache.length, cache.length + 1, ... and appends their keys and
  // values to the cache. Many tokens at once is prefill; one token is a decode step.
  // Returns the logits of the last token ([vocab]) or, with all_positions, of every token
  // ([tokens x vocab], row-major). InputError for token ids outside the vocabulary or a
  // sequence longer than the cache.
  std::vector<float> forward(std::span<const int32_t> tokens, KvCache& cache,
                             bool all_positions = false);

  const ModelConfig& config() const { return config_; }
  compute::Backend& backend() { return backend_; }

 private:
  void attention_block(const LayerWeights& layer, int64_t layer_index, compute::Tensor& x,
                       std::span<const int32_t> positions, KvCache& cache);
  void feed_forward_block(const LayerWeights& layer, compute::Tensor& x);
  // Normalises x into out with the architecture's norm (RMSNorm or LayerNorm).
  void norm(const compute::Tensor& x, const compute::Tensor& weight, const compute::Tensor& bias,
            compute::Tensor& out);
  void check_input(std::span<const int32_t> tokens, const KvCache& cache) const;
  compute::Tensor activation(int64_t rows, int64_t cols);

  ModelConfig config_;
  ModelWeights weights_;
  compute::Backend& backend_;
};

}  // namespace servescope::model
