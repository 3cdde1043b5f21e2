#include "engine/model/model_config.h"

#include <cmath>
#include <utility>

#include "engine/core/error.h"

namespace servescope::model {
namespace {

ModelError missing(const gguf::GgufFile& file, const std::string& key) {
  return ModelError(ModelError::Kind::kMissingMetadata,
                    file.name() + ": metadata key " + key + " is missing");
}

// Typed reads of metadata values that name the key when the type is wrong (the value's own
// accessors say only "expected string, found uint32").
ModelError wrong_type(const gguf::GgufFile& file, const std::string& key,
                      const std::string& expected, const gguf::Value& value) {
  return ModelError(ModelError::Kind::kMissingMetadata,
                    file.name() + ": metadata key " + key + " must be " + expected + ", but is " +
                        std::string(gguf::value_type_name(value.type())));
}

const std::string& string_value(const gguf::GgufFile& file, const std::string& key,
                                const gguf::Value& value) {
  if (value.type() != gguf::ValueType::kString) throw wrong_type(file, key, "a string", value);
  return value.as_string();
}

double number_value(const gguf::GgufFile& file, const std::string& key, const gguf::Value& value) {
  const bool is_float =
      value.type() == gguf::ValueType::kFloat32 || value.type() == gguf::ValueType::kFloat64;
  if (!is_float && !value.is_integer()) throw wrong_type(file, key, "a number", value);
  return value.as_float();
}

bool bool_value(const gguf::GgufFile& file, const std::string& key, const gguf::Value& value) {
  if (value.type() != gguf::ValueType::kBool) throw wrong_type(file, key, "a bool", value);
  return value.as_bool();
}

int64_t positive_int(const gguf::GgufFile& file, const std::string& key) {
  const gguf::Value* v = file.find(key);
  if (v == nullptr) throw missing(file, key);
  if (!v->is_integer() || v->as_int() <= 0 || v->as_int() > (int64_t{1} << 31)) {
    throw ModelError(ModelError::Kind::kMissingMetadata,
                     file.name() + ": metadata key " + key + " must be a positive integer");
  }
  return v->as_int();
}

// zero_allowed: 0 is a value (e.g. "no soft-capping"), not an error.
float float_or(const gguf::GgufFile& file, const std::string& key, float fallback,
               bool zero_allowed = false) {
  const gguf::Value* v = file.find(key);
  if (v == nullptr) return fallback;
  const double value = number_value(file, key, *v);
  if (!(value > 0.0) && !(zero_allowed && value == 0.0)) {
    throw ModelError(ModelError::Kind::kMissingMetadata,
                     file.name() + ": metadata key " + key + " must be a positive number");
  }
  return static_cast<float>(value);
}

constexpr std::pair<std::string_view, Architecture> kArchitectures[] = {
    {"llama", Architecture::kLlama},  {"gpt2", Architecture::kGpt2},
    {"qwen2", Architecture::kQwen2},  {"phi3", Architecture::kPhi3},
    {"gemma", Architecture::kGemma},  {"gemma2", Architecture::kGemma2},
    {"gemma3", Architecture::kGemma3}};

Architecture parse_architecture(const gguf::GgufFile& file) {
  const gguf::Value* v = file.find("general.architecture");
  if (v == nullptr) throw missing(file, "general.architecture");
  const std::string& arch = string_value(file, "general.architecture", *v);
  for (const auto& [name, value] : kArchitectures) {
    if (arch == name) return value;
  }
  throw ModelError(ModelError::Kind::kUnsupportedArchitecture,
                   file.name() + ": architecture '" + arch +
                       "' is not supported; supported: " + supported_architectures());
}

void check(bool ok, const gguf::GgufFile& file, const std::string& what) {
  if (!ok) throw ModelError(ModelError::Kind::kBadShape, file.name() + ": " + what);
}

// The positive integer `key` must equal `expected` (what the model already has as `what`).
void check_same(const gguf::GgufFile& file, const std::string& key, int64_t expected,
                const std::string& what, const std::string& otherwise) {
  const int64_t value = positive_int(file, key);
  check(value == expected, file,
        key + " (" + std::to_string(value) + ") differs from " + what + " (" +
            std::to_string(expected) + "); " + otherwise);
}

std::string string_or(const gguf::GgufFile& file, const std::string& key,
                      const std::string& fallback) {
  const gguf::Value* v = file.find(key);
  return v == nullptr ? fallback : string_value(file, key, *v);
}

// rope.scaling.type / rope.scaling.factor, as llama.cpp reads them: linear scaling divides
// positions by the factor; none (or a factor of 0 or 1) leaves them. llama 3's scaling comes as
// the tensor rope_freqs.weight instead (frequency factors), read by load_weights.
void read_rope_scaling(const gguf::GgufFile& file, const std::string& prefix, ModelConfig& c) {
  const std::string type = string_or(file, prefix + "rope.scaling.type", "linear");
  if (type != "linear" && type != "none") {
    throw ModelError(ModelError::Kind::kUnsupportedArchitecture,
                     file.name() + ": " + prefix + "rope.scaling.type '" + type +
                         "' is not supported; supported: none, linear (and llama 3's "
                         "rope_freqs.weight frequency factors)");
  }
  if (const gguf::Value* factor = file.find(prefix + "rope.scaling.factor")) {
    const double value = number_value(file, prefix + "rope.scaling.factor", *factor);
    if (!(value >= 0.0)) {
      throw ModelError(
          ModelError::Kind::kMissingMetadata,
          file.name() + ": metadata key " + prefix + "rope.scaling.factor must be a number >= 0");
    }
    if (type == "linear" && value > 0.0) {
      c.rope_scaling_factor = static_cast<float>(value);
      c.rope_freq_scale = static_cast<float>(1.0 / value);
    }
  }
  c.rope_freq_factors = file.find_tensor("rope_freqs.weight") != nullptr;
}

// attention.sliding_window_pattern, as llama.cpp reads it: n (every n-th layer global, the
// others local) or one bool per layer (true: local).
void read_window_pattern(const gguf::GgufFile& file, const std::string& key,
                         const gguf::Value& pattern, ModelConfig& c) {
  if (pattern.is_integer() && pattern.as_int() >= 1) {
    c.swa_pattern = pattern.as_int();
    return;
  }
  if (pattern.type() == gguf::ValueType::kArray &&
      pattern.as_array().element_type == gguf::ValueType::kBool &&
      static_cast<int64_t>(pattern.as_array().items.size()) == c.n_layers) {
    for (const gguf::Value& local : pattern.as_array().items)
      c.local_layers.push_back(local.as_bool());
    return;
  }
  throw ModelError(ModelError::Kind::kUnsupportedArchitecture,
                   file.name() + ": " + key +
                       " is not supported; supported: a positive integer (every n-th layer "
                       "global) or one bool per layer (" +
                       std::to_string(c.n_layers) + ")");
}

// What the gemma family adds to llama.
void read_gemma(const gguf::GgufFile& file, const std::string& prefix, ModelConfig& c) {
  c.gelu_gate = true;
  c.embedding_scale = std::sqrt(static_cast<float>(c.dim));
  if (c.architecture == Architecture::kGemma) return;
  c.post_norms = true;
  // Gemma's own code scales queries by 1/sqrt(dim / heads) in its 27B models, by
  // 1/sqrt(head_dim) otherwise; llama.cpp tells them apart by their layer count.
  const bool is_27b = (c.architecture == Architecture::kGemma2 && c.n_layers == 46) ||
                      (c.architecture == Architecture::kGemma3 && c.n_layers == 62);
  if (is_27b) c.attention_scale = 1.0f / std::sqrt(static_cast<float>(c.dim / c.n_heads));
  if (c.architecture == Architecture::kGemma2) {
    // Absent keys mean gemma2's own values, as in llama.cpp.
    c.attn_softcap = float_or(file, prefix + "attn_logit_softcapping", 50.0f, true);
    c.final_softcap = float_or(file, prefix + "final_logit_softcapping", 30.0f, true);
    c.sliding_window = file.find(prefix + "attention.sliding_window")
                           ? positive_int(file, prefix + "attention.sliding_window")
                           : 4096;
    c.swa_pattern = 2;
    c.rope_freq_base_local = float_or(file, prefix + "rope.freq_base_swa", c.rope_freq_base);
    c.rope_freq_scale_local = c.rope_freq_scale;
  } else {  // gemma3: local layers unscaled (rope_freq_scale_local stays 1)
    c.qk_norm = true;
    c.final_softcap = float_or(file, prefix + "final_logit_softcapping", 0.0f, true);
    if (file.find(prefix + "attention.sliding_window")) {
      c.sliding_window = positive_int(file, prefix + "attention.sliding_window");
      c.swa_pattern = 6;
    }
    c.rope_freq_base_local = float_or(file, prefix + "rope.freq_base_swa", 10000.0f);
  }
  if (const gguf::Value* pattern = file.find(prefix + "attention.sliding_window_pattern")) {
    read_window_pattern(file, prefix + "attention.sliding_window_pattern", *pattern, c);
  }
}

// Every architecture but gpt2: RMSNorm, RoPE, grouped-query attention, a gated feed-forward.
void read_llama_like(const gguf::GgufFile& file, const std::string& prefix, ModelConfig& c) {
  c.n_kv_heads = file.find(prefix + "attention.head_count_kv")
                     ? positive_int(file, prefix + "attention.head_count_kv")
                     : c.n_heads;
  check(c.n_heads % c.n_kv_heads == 0, file,
        prefix + "attention.head_count (" + std::to_string(c.n_heads) +
            ") is not a multiple of attention.head_count_kv (" + std::to_string(c.n_kv_heads) +
            ")");
  if (file.find(prefix + "rope.dimension_count")) {
    check_same(file, prefix + "rope.dimension_count", c.head_dim, "the head size",
               "partial RoPE is not supported");
  }
  check(c.head_dim % 2 == 0, file, "RoPE needs an even head size");
  c.norm_eps = float_or(file, prefix + "attention.layer_norm_rms_epsilon", 1e-5f);
  c.rope_freq_base = float_or(file, prefix + "rope.freq_base", 10000.0f);
  read_rope_scaling(file, prefix, c);
  c.rope_neox = c.architecture != Architecture::kLlama;
  c.qkv_bias = c.architecture == Architecture::kQwen2;
  if (c.architecture == Architecture::kPhi3 && (file.find_tensor("rope_factors_long.weight") ||
                                                file.find_tensor("rope_factors_short.weight"))) {
    throw ModelError(ModelError::Kind::kUnsupportedArchitecture,
                     file.name() +
                         ": phi3's long-context RoPE factors (rope_factors_long/short) "
                         "are not supported; supported: phi3 without them (e.g. 4k "
                         "context models)");
  }
  if (c.architecture == Architecture::kGemma || c.architecture == Architecture::kGemma2 ||
      c.architecture == Architecture::kGemma3) {
    read_gemma(file, prefix, c);
  }
}

}  // namespace

std::string_view architecture_name(Architecture arch) {
  for (const auto& [name, value] : kArchitectures) {
    if (arch == value) return name;
  }
  return "unknown";
}

std::string supported_architectures() {
  std::string list;
  for (const auto& [name, value] : kArchitectures)
    list += (list.empty() ? "" : ", ") + std::string(name);
  return list;
}

ModelConfig read_model_config(const gguf::GgufFile& file) {
  ModelConfig c;
  c.architecture = parse_architecture(file);
  const std::string prefix = std::string(architecture_name(c.architecture)) + ".";
  if (const gguf::Value* name = file.find("general.name"))
    c.name = string_value(file, "general.name", *name);
  if (const gguf::Value* random = file.find(kRandomWeightsKey))
    c.random_weights = bool_value(file, std::string(kRandomWeightsKey), *random);

  c.context_length = positive_int(file, prefix + "context_length");
  c.dim = positive_int(file, prefix + "embedding_length");
  c.n_layers = positive_int(file, prefix + "block_count");
  c.ffn_dim = positive_int(file, prefix + "feed_forward_length");
  c.n_heads = positive_int(file, prefix + "attention.head_count");
  if (file.find(prefix + "attention.key_length")) {  // gemma: heads need not split dim
    c.head_dim = positive_int(file, prefix + "attention.key_length");
    if (file.find(prefix + "attention.value_length")) {
      check_same(file, prefix + "attention.value_length", c.head_dim, "attention.key_length",
                 "only equal key and value sizes are supported");
    }
  } else {
    check(c.dim % c.n_heads == 0, file,
          prefix + "embedding_length (" + std::to_string(c.dim) +
              ") is not a multiple of attention.head_count (" + std::to_string(c.n_heads) + ")");
    c.head_dim = c.dim / c.n_heads;
  }

  if (c.architecture == Architecture::kGpt2) {
    c.n_kv_heads = c.n_heads;
    c.norm_eps = float_or(file, prefix + "attention.layer_norm_epsilon", 1e-5f);
  } else {
    read_llama_like(file, prefix, c);
  }

  const gguf::TensorInfo* embd = file.find_tensor("token_embd.weight");
  if (embd == nullptr) {
    throw ModelError(ModelError::Kind::kMissingTensor,
                     file.name() + ": tensor token_embd.weight is missing");
  }
  check(embd->shape.size() == 2 && embd->shape[0] == c.dim, file,
        "tensor token_embd.weight should be [" + std::to_string(c.dim) + " x vocab]");
  c.vocab_size = embd->shape[1];
  c.tied_output = file.find_tensor("output.weight") == nullptr;
  c.token_embd_row_bytes = gguf::row_bytes(embd->type, c.dim);
  if (const gguf::TensorInfo* pos = file.find_tensor("position_embd.weight")) {
    c.position_embd_rows = pos->rows();
    c.position_embd_row_bytes = gguf::row_bytes(pos->type, pos->shape[0]);
  }
  return c;
}

}  // namespace servescope::model
