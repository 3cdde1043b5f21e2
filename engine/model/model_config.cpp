#include "engine/model/model_config.h"

#include "engine/core/error.h"

namespace servescope::model {
namespace {

ModelError missing(const gguf::GgufFile& file, const std::string& key) {
  return ModelError(ModelError::Kind::kMissingMetadata,
                    file.name() + ": metadata key " + key + " is missing");
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

float float_or(const gguf::GgufFile& file, const std::string& key, float fallback) {
  const gguf::Value* v = file.find(key);
  if (v == nullptr) return fallback;
  const double value = v->as_float();
  if (!(value > 0.0)) {
    throw ModelError(ModelError::Kind::kMissingMetadata,
                     file.name() + ": metadata key " + key + " must be a positive number");
  }
  return static_cast<float>(value);
}

Architecture parse_architecture(const gguf::GgufFile& file) {
  const gguf::Value* v = file.find("general.architecture");
  if (v == nullptr) throw missing(file, "general.architecture");
  const std::string& arch = v->as_string();
  if (arch == "llama") return Architecture::kLlama;
  if (arch == "gpt2") return Architecture::kGpt2;
  throw ModelError(
      ModelError::Kind::kUnsupportedArchitecture,
      file.name() + ": architecture '" + arch + "' is not supported; supported: llama, gpt2");
}

void check(bool ok, const gguf::GgufFile& file, const std::string& what) {
  if (!ok) throw ModelError(ModelError::Kind::kBadShape, file.name() + ": " + what);
}

}  // namespace

std::string_view architecture_name(Architecture arch) {
  return arch == Architecture::kLlama ? "llama" : "gpt2";
}

ModelConfig read_model_config(const gguf::GgufFile& file) {
  ModelConfig c;
  c.architecture = parse_architecture(file);
  const std::string prefix = std::string(architecture_name(c.architecture)) + ".";
  if (const gguf::Value* name = file.find("general.name")) c.name = name->as_string();

  c.context_length = positive_int(file, prefix + "context_length");
  c.dim = positive_int(file, prefix + "embedding_length");
  c.n_layers = positive_int(file, prefix + "block_count");
  c.ffn_dim = positive_int(file, prefix + "feed_forward_length");
  c.n_heads = positive_int(file, prefix + "attention.head_count");
  check(c.dim % c.n_heads == 0, file,
        prefix + "embedding_length (" + std::to_string(c.dim) +
            ") is not a multiple of attention.head_count (" + std::to_string(c.n_heads) + ")");
  c.head_dim = c.dim / c.n_heads;

  if (c.architecture == Architecture::kLlama) {
    c.n_kv_heads = file.find(prefix + "attention.head_count_kv")
                       ? positive_int(file, prefix + "attention.head_count_kv")
                       : c.n_heads;
    check(c.n_heads % c.n_kv_heads == 0, file,
          prefix + "attention.head_count (" + std::to_string(c.n_heads) +
              ") is not a multiple of attention.head_count_kv (" + std::to_string(c.n_kv_heads) +
              ")");
    if (file.find(prefix + "rope.dimension_count")) {
      const int64_t rope_dims = positive_int(file, prefix + "rope.dimension_count");
      check(rope_dims == c.head_dim, file,
            prefix + "rope.dimension_count (" + std::to_string(rope_dims) +
                ") differs from the head size (" + std::to_string(c.head_dim) +
                "); partial RoPE is not supported");
    }
    check(c.head_dim % 2 == 0, file, "RoPE needs an even head size");
    c.norm_eps = float_or(file, prefix + "attention.layer_norm_rms_epsilon", 1e-5f);
    c.rope_freq_base = float_or(file, prefix + "rope.freq_base", 10000.0f);
  } else {
    c.n_kv_heads = c.n_heads;
    c.norm_eps = float_or(file, prefix + "attention.layer_norm_epsilon", 1e-5f);
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
