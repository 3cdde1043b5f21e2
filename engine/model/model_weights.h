// The tensors of a transformer, uploaded to a backend. Shapes follow PyTorch's [out x in]
// for matrices (rows = output features); vectors are [1 x n].
#pragma once

#include <vector>

#include "engine/compute/backend.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model_config.h"

namespace servescope::model {

// Matrices that read the same input and whose outputs sit side by side (q | k | v, gate | up).
// Parts stored in one type are concatenated into one matrix at load time - GGML rows are
// independent, so that is byte concatenation - and the forward pass runs one product instead
// of one per part: fewer dispatches per step on Vulkan. Parts of different types stay apart.
struct FusedMatrix {
  std::vector<compute::WeightMatrix> parts;  // in the order of their output columns
};

struct LayerWeights {
  // attention
  compute::Tensor attn_norm;       // [dim]   RMSNorm (llama) or LayerNorm weight (gpt2)
  compute::Tensor attn_norm_bias;  // [dim]   gpt2 only
  FusedMatrix wqkv;                // [q_dim + 2*kv_dim x dim]     rows q, k, v
  compute::Tensor bqkv;            // [q_dim + 2*kv_dim]           gpt2, qwen2
  compute::Tensor q_norm;          // [head_dim]                   gemma3 only
  compute::Tensor k_norm;          // [head_dim]                   gemma3 only
  compute::WeightMatrix wo;        // [dim x n_heads*head_dim]
  compute::Tensor bo;              // [dim]                        gpt2 only
  compute::Tensor post_attn_norm;  // [dim]                        gemma2, gemma3
  // feed-forward
  compute::Tensor ffn_norm;       // [dim]
  compute::Tensor ffn_norm_bias;  // [dim]                        gpt2 only
  FusedMatrix w_gate_up;          // [2*ffn_dim x dim] rows gate, up    gated FFNs (not gpt2)
  compute::WeightMatrix w_up;     // [ffn_dim x dim]              gpt2 only
  compute::Tensor b_up;           // [ffn_dim]                    gpt2 only
  compute::WeightMatrix w_down;   // [dim x ffn_dim]
  compute::Tensor b_down;         // [dim]                        gpt2 only
  compute::Tensor post_ffn_norm;  // [dim]                        gemma2, gemma3
};

struct ModelWeights {
  compute::WeightMatrix token_embd;     // [vocab x dim]
  compute::WeightMatrix position_embd;  // [context x dim]  gpt2 only
  std::vector<LayerWeights> layers;
  compute::Tensor output_norm;           // [dim]
  compute::Tensor output_norm_bias;      // [dim]            gpt2 only
  compute::WeightMatrix output;          // [vocab x dim]    == token_embd when tied
  std::vector<float> rope_freq_factors;  // [head_dim/2]     llama 3's rope_freqs.weight
};

// Checks every tensor the architecture needs (present, right shape, supported type) and
// uploads it. ModelError naming the file and the tensor otherwise.
ModelWeights load_weights(const gguf::GgufFile& file, const ModelConfig& config,
                          compute::Backend& backend);

}  // namespace servescope::model
