// The hyper-parameters of a transformer, read from GGUF metadata.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/gguf/gguf_file.h"

namespace servescope::model {

// Metadata key (bool) that marks a file whose weights are random (servescope-cli make-model):
// good for timing, while the text it writes is meaningless; displays show kRandomWeightsNote.
inline constexpr std::string_view kRandomWeightsKey = "servescope.random_weights";
inline constexpr std::string_view kRandomWeightsNote =
    "random weights: timing only, text is meaningless";

enum class Architecture {
  kLlama,  // RMSNorm, RoPE, grouped-query attention, SwiGLU
  kGpt2,   // LayerNorm with bias, learned positions, fused QKV, GELU
};

std::string_view architecture_name(Architecture arch);

struct ModelConfig {
  Architecture architecture = Architecture::kLlama;
  std::string name;            // general.name, if any
  int64_t vocab_size = 0;      // rows of token_embd
  int64_t context_length = 0;  // the longest sequence the model was trained for
  int64_t dim = 0;             // embedding width
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;  // == n_heads without grouped-query attention
  int64_t head_dim = 0;    // dim / n_heads
  int64_t ffn_dim = 0;
  float norm_eps = 1e-5f;           // RMSNorm (llama) or LayerNorm (gpt2) epsilon
  float rope_freq_base = 10000.0f;  // llama only
  bool tied_output = false;         // logits use token_embd when the file has no output.weight
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
