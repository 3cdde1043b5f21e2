// Bytes moved and FLOPs of one forward step, from the model's shape and the batch's
// composition: the model the roofline panel puts next to the measured points.
//
// FLOPs (a multiply-add counts 2):
//   matmuls    2 x matmul_parameters_per_layer x layers x tokens in the step
//   logits     2 x dim x vocab per sequence whose last token is sampled
//   attention  4 x n_heads x head_dim x layers x sum over new tokens of the context it attends
//              (q.k over the context, then the weighted sum of values; causal: the i-th new
//              token of a sequence with c cached tokens attends c + i tokens)
// Norms, activations, RoPE and softmax are O(dim) per token and left out.
// Bytes:
//   weights    every weight byte once per step (passed in: the file's tensor bytes), shared by
//              all tokens of the batch: the reason batching pays; except the embedding tables,
//              of which a step reads only the rows it gathers, one per new token (token_embd,
//              and gpt2's position_embd): the rest of those tables stays unread, unless the
//              output projection is tied to token_embd, which then reads it whole for the
//              logits. (Counting the whole token_embd every step overstated the bundled model's
//              bytes per step by about 11%.)
//   KV read    each sequence's cache once per step, its new tokens' keys and values included
//   KV written every new token's keys and values in every layer
#pragma once

#include <cstdint>
#include <span>

#include "engine/model/model_config.h"

namespace servescope::telemetry {

// One sequence's share of a step.
struct SequenceWork {
  int64_t new_tokens = 0;      // tokens processed this step (1 when decoding)
  int64_t cached_tokens = 0;   // tokens already in its KV cache before the step
  bool samples_logits = true;  // the step computes logits for its last token
};

struct StepCost {
  double matmul_flops = 0.0;
  double logits_flops = 0.0;
  double attention_flops = 0.0;
  uint64_t weight_bytes_read = 0;
  uint64_t kv_bytes_read = 0;
  uint64_t kv_bytes_written = 0;

  double flops() const { return matmul_flops + logits_flops + attention_flops; }
  uint64_t bytes_moved() const { return weight_bytes_read + kv_bytes_read + kv_bytes_written; }
};

// Weights multiplied per token in one layer: llama q, k, v, o and the SwiGLU gate, up, down;
// gpt2 the fused qkv, o, and the MLP's up and down.
int64_t matmul_parameters_per_layer(const model::ModelConfig& config);

// Weight bytes one step reads when it runs `new_tokens` tokens (see the header comment), from
// the file's weight_bytes and the config's embedding row sizes. 0 for no tokens.
uint64_t weight_bytes_read(const model::ModelConfig& config, uint64_t weight_bytes,
                           int64_t new_tokens);

// kv_bytes_per_token: all layers' keys and values of one token as the cache stores them
// (KvBlockPool::bytes_per_token()).
StepCost estimate_step_cost(const model::ModelConfig& config, uint64_t weight_bytes,
                            uint64_t kv_bytes_per_token, std::span<const SequenceWork> batch);

}  // namespace servescope::telemetry
