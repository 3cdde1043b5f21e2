// The hyper-parameters of a transformer, read from GGUF metadata.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf_file.h"

namespace servescope::model {

// Metadata key (bool) that marks a file whose weights are random (servescope-cli make-model):
// good for timing, while the text it writes is meaningless; displays show kRandomWeightsNote.
inline constexpr std::string_view kRandomWeightsKey = "servescope.random_weights";
inline constexpr std::string_view kRandomWeightsNote =
    "random weights: timing only, text is meaningless";

enum class Architecture {
  kLlama,   // RMSNorm, RoPE, grouped-query attention, SwiGLU
  kGpt2,    // LayerNorm with bias, learned positions, fused QKV, GELU
  kQwen2,   // llama with q, k and v biases and neox RoPE
  kPhi3,    // llama with fused q|k|v and gate|up matrices and neox RoPE
  kGemma,   // llama with embeddings times sqrt(dim), GELU gating (GeGLU), neox RoPE
  kGemma2,  // gemma with post-block norms, soft-capping, sliding-window layers
  kGemma3,  // gemma2 with per-head q/k norms, local layers with their own RoPE base
};

std::string_view architecture_name(Architecture arch);
// "llama, gpt2, qwen2, ...": what ServeScope runs, for messages.
std::string supported_architectures();

struct ModelConfig {
  Architecture architecture = Architecture::kLlama;
  std::string name;            // general.name, if any
  int64_t vocab_size = 0;      // rows of token_embd
  int64_t context_length = 0;  // the longest sequence the model was trained for
  int64_t dim = 0;             // embedding width
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;  // == n_heads without grouped-query attention
  int64_t head_dim = 0;    // dim / n_heads, or attention.key_length where given (gemma)
  int64_t ffn_dim = 0;
  float norm_eps = 1e-5f;           // RMSNorm (llama) or LayerNorm (gpt2) epsilon
  float rope_freq_base = 10000.0f;  // every architecture but gpt2
  bool tied_output = false;         // logits use token_embd when the file has no output.weight

  // --- what the llama-like architectures add (defaults: plain llama) ---
  bool rope_neox = false;            // pairs (i, i + d/2) instead of (2i, 2i+1)
  float rope_freq_scale = 1.0f;      // rope.scaling.type linear: 1 / rope.scaling.factor
  float rope_scaling_factor = 0.0f;  // as the file gives it (0: none), for display
  bool rope_freq_factors = false;    // rope_freqs.weight divides each pair's frequency (llama 3)
  bool qkv_bias = false;             // attn_q/k/v.bias (qwen2)
  bool gelu_gate = false;            // GELU instead of SiLU on the gate (gemma)
  float embedding_scale = 0.0f;      // > 0: embeddings times this (gemma: sqrt(dim))
  float attention_scale = 0.0f;      // q.k multiplier; 0: 1 / sqrt(head_dim)
  float attn_softcap = 0.0f;         // > 0: attention scores soft-capped (gemma2)
  float final_softcap = 0.0f;        // > 0: logits soft-capped (gemma2)
  bool post_norms = false;           // post_attention_norm and post_ffw_norm (gemma2, gemma3)
  bool qk_norm = false;              // per-head attn_q_norm and attn_k_norm (gemma3)
  int64_t sliding_window = 0;        // > 0: local layers see this many positions
  int64_t swa_pattern = 0;           // local layers: l % swa_pattern < swa_pattern - 1 (0: none)
  std::vector<bool> local_layers;    // attention.sliding_window_pattern as one bool per layer
  float rope_freq_base_local = 10000.0f;  // RoPE base of local layers (gemma2, gemma3)
  float rope_freq_scale_local = 1.0f;     // and their linear scale (gemma2: as global layers)

  // Whether layer l attends through the sliding window (gemma2: even layers; gemma3: five of
  // every six).
  bool is_local_layer(int64_t layer) const {
    if (sliding_window <= 0) return false;
    if (!local_layers.empty()) return local_layers[static_cast<size_t>(layer)];
    return swa_pattern > 0 && layer % swa_pattern < swa_pattern - 1;
  }
  bool uses_rope() const { return architecture != Architecture::kGpt2; }
  // Bytes of one stored row of the embedding tables (0: unknown). A step gathers only the rows
  // of its tokens and positions, so it reads these tables only in part (telemetry::step_cost).
  uint64_t token_embd_row_bytes = 0;
  int64_t position_embd_rows = 0;  // gpt2's learned positions; 0 without the table
  uint64_t position_embd_row_bytes = 0;
  bool random_weights = false;  // kRandomWeightsKey: fit for timing, not for text

  int64_t kv_dim() const { return n_kv_heads * head_dim; }
};

// Reads `general.architecture` and `<arch>.*` keys; ModelError naming the file and the key if
// something is missing or inconsistent, or if the architecture is not one ServeScope runs.
ModelConfig read_model_config(const gguf::GgufFile& file);

}  // namespace servescope::model
