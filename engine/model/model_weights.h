// The tensors of a transformer, uploaded to a backend. Shapes follow PyTorch's [out x in]
// for matrices (rows = output features); vectors are [1 x n].
#pragma once

#include <vector>

#include "engine/compute/backend.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model_config.h"

namespace servescope::model {

struct LayerWeights {
  // attention
  compute::Tensor attn_norm;       // [dim]   RMSNorm (llama) or LayerNorm weight (gpt2)
  compute::Tensor attn_norm_bias;  // [dim]   gpt2 only
  compute::WeightMatrix wq;        // [n_heads*head_dim x dim]     llama only
  compute::WeightMatrix wk;        // [n_kv_heads*head_dim x dim]  llama only
  compute::WeightMatrix wv;        // [n_kv_heads*head_dim x dim]  llama only
  compute::WeightMatrix wqkv;      // [3*dim x dim] rows q, k, v   gpt2 only
  compute::Tensor bqkv;            // [3*dim]                      gpt2 only
  compute::WeightMatrix wo;        // [dim x n_heads*head_dim]
  compute::Tensor bo;              // [dim]                        gpt2 only
  // feed-forward
  compute::Tensor ffn_norm;        // [dim]
  compute::Tensor ffn_norm_bias;   // [dim]                        gpt2 only
  compute::WeightMatrix w_gate;    // [ffn_dim x dim]              llama only (SwiGLU)
  compute::WeightMatrix w_up;      // [ffn_dim x dim]
  compute::Tensor b_up;            // [ffn_dim]                    gpt2 only
  compute::WeightMatrix w_down;    // [dim x ffn_dim]
  compute::Tensor b_down;          // [dim]                        gpt2 only
};

struct ModelWeights {
  compute::WeightMatrix token_embd;     // [vocab x dim]
  compute::WeightMatrix position_embd;  // [context x dim]  gpt2 only
  std::vector<LayerWeights> layers;
  compute::Tensor output_norm;          // [dim]
  compute::Tensor output_norm_bias;     // [dim]            gpt2 only
  compute::WeightMatrix output;         // [vocab x dim]    == token_embd when tied
};

// Checks every tensor the architecture needs (present, right shape, supported type) and
// uploads it. ModelError naming the file and the tensor otherwise.
ModelWeights load_weights(const gguf::GgufFile& file, const ModelConfig& config,
                          compute::Backend& backend);

}  // namespace servescope::model
