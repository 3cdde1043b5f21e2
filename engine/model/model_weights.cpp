#include "engine/model/model_weights.h"

#include <unistd.h>

#include <new>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/error.h"

namespace servescope::model {
namespace {

std::string shape_text(std::span<const int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? " x " : "") + std::to_string(shape[i]);
  return text + "]";
}

// The machine's physical memory in bytes (0 when unknown).
uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0
             ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size)
             : 0;
}

// Finds a tensor and checks its GGUF shape (ne0 first: a PyTorch [out x in] matrix is {in, out})
// and that it can be held in memory: a tensor the file holds (perhaps sparsely) but no memory
// can is refused by name, not with a bare std::bad_alloc.
class TensorLoader {
 public:
  TensorLoader(const gguf::GgufFile& file, compute::Backend& backend)
      : file_(file), backend_(backend), memory_bytes_(physical_memory_bytes()) {}

  compute::WeightMatrix matrix(const std::string& name, int64_t rows, int64_t cols) const {
    const gguf::TensorInfo& info = find(name, {cols, rows});
    return allocating(name, info.n_bytes, [&] {
      return backend_.upload_matrix(info.type, rows, cols,
                                    std::span<const uint8_t>(info.data, info.n_bytes));
    });
  }

  // The matrices [rows_i x cols] named, side by side in one FusedMatrix. Each run of one type
  // goes up as a single matrix, and only that: no weight is held twice.
  FusedMatrix fused(const std::vector<std::pair<std::string, int64_t>>& named_rows,
                    int64_t cols) const {
    std::vector<const gguf::TensorInfo*> infos;
    for (const auto& [name, rows] : named_rows) infos.push_back(&find(name, {cols, rows}));
    FusedMatrix result;
    for (size_t first = 0; first < infos.size();) {
      size_t end = first + 1;
      while (end < infos.size() && infos[end]->type == infos[first]->type) ++end;
      int64_t rows = 0;
      uint64_t n_bytes = 0;
      for (size_t i = first; i < end; ++i) {
        rows += infos[i]->rows();
        n_bytes += infos[i]->n_bytes;
      }
      result.parts.push_back(allocating(infos[first]->name, n_bytes, [&] {
        std::vector<uint8_t> bytes;
        bytes.reserve(n_bytes);
        for (size_t i = first; i < end; ++i) {
          bytes.insert(bytes.end(), infos[i]->data, infos[i]->data + infos[i]->n_bytes);
        }
        return backend_.upload_matrix(infos[first]->type, rows, cols, bytes);
      }));
      first = end;
    }
    return result;
  }

  compute::Tensor vector(const std::string& name, int64_t n) const {
    return backend_.upload_vector(host_vector(name, n));
  }

  // The vectors named, end to end, as one (qwen2's q, k and v biases for the fused product).
  compute::Tensor joined_vector(const std::vector<std::pair<std::string, int64_t>>& parts) const {
    std::vector<float> values;
    for (const auto& [name, n] : parts) {
      const std::vector<float> part = host_vector(name, n);
      values.insert(values.end(), part.begin(), part.end());
    }
    return backend_.upload_vector(values);
  }

  std::vector<float> host_vector(const std::string& name, int64_t n) const {
    const gguf::TensorInfo& info = find(name, {n});
    std::vector<float> values(static_cast<size_t>(n));
    gguf::dequantize_row(info.type, info.data, values.data(), n);
    return values;
  }

  bool has(const std::string& name) const { return file_.find_tensor(name) != nullptr; }

 private:
  const gguf::TensorInfo& find(const std::string& name, std::vector<int64_t> expected) const {
    const gguf::TensorInfo* info = file_.find_tensor(name);
    if (info == nullptr) {
      throw ModelError(ModelError::Kind::kMissingTensor,
                       file_.name() + ": tensor " + name + " is missing");
    }
    if (info->shape != expected) {
      throw ModelError(ModelError::Kind::kBadShape,
                       file_.name() + ": tensor " + name + " has shape " + shape_text(info->shape) +
                           " (GGUF order), expected " + shape_text(expected));
    }
    if (memory_bytes_ != 0 && info->n_bytes > memory_bytes_) throw too_large(name, info->n_bytes);
    return *info;
  }

  ModelError too_large(const std::string& name, uint64_t bytes) const {
    return ModelError(ModelError::Kind::kBadShape,
                      file_.name() + ": tensor " + name + " needs " + std::to_string(bytes) +
                          " bytes, more than the " + std::to_string(memory_bytes_) +
                          " bytes of memory this machine has");
  }

  // Runs `upload`, the allocation of tensor `name`'s `bytes`; running out of memory there is
  // reported with the tensor and its size.
  template <class Upload>
  compute::WeightMatrix allocating(const std::string& name, uint64_t bytes, Upload upload) const {
    try {
      return upload();
    } catch (const std::bad_alloc&) {
      throw ModelError(ModelError::Kind::kBadShape,
                       file_.name() + ": tensor " + name + " needs " + std::to_string(bytes) +
                           " bytes, which could not be allocated (out of memory)");
    }
  }

  const gguf::GgufFile& file_;
  compute::Backend& backend_;
  uint64_t memory_bytes_;
};

// Every architecture but gpt2: llama's layer, with what qwen2, phi3 and gemma add or fuse.
LayerWeights load_llama_layer(const TensorLoader& load, const ModelConfig& c,
                              const std::string& p) {
  LayerWeights l;
  const int64_t q_dim = c.n_heads * c.head_dim;
  l.attn_norm = load.vector(p + "attn_norm.weight", c.dim);
  if (load.has(p + "attn_qkv.weight")) {  // phi3 stores q | k | v as one matrix
    l.wqkv = load.fused({{p + "attn_qkv.weight", q_dim + 2 * c.kv_dim()}}, c.dim);
  } else {
    l.wqkv = load.fused({{p + "attn_q.weight", q_dim},
                         {p + "attn_k.weight", c.kv_dim()},
                         {p + "attn_v.weight", c.kv_dim()}},
                        c.dim);
  }
  if (c.qkv_bias) {
    l.bqkv = load.joined_vector({{p + "attn_q.bias", q_dim},
                                 {p + "attn_k.bias", c.kv_dim()},
                                 {p + "attn_v.bias", c.kv_dim()}});
  }
  if (c.qk_norm) {
    l.q_norm = load.vector(p + "attn_q_norm.weight", c.head_dim);
    l.k_norm = load.vector(p + "attn_k_norm.weight", c.head_dim);
  }
  l.wo = load.matrix(p + "attn_output.weight", c.dim, q_dim);
  if (c.post_norms) {
    l.post_attn_norm = load.vector(p + "post_attention_norm.weight", c.dim);
    l.post_ffn_norm = load.vector(p + "post_ffw_norm.weight", c.dim);
  }
  l.ffn_norm = load.vector(p + "ffn_norm.weight", c.dim);
  if (c.architecture == Architecture::kPhi3) {  // gate | up as one matrix, gate first
    l.w_gate_up = load.fused({{p + "ffn_up.weight", 2 * c.ffn_dim}}, c.dim);
  } else {
    l.w_gate_up =
        load.fused({{p + "ffn_gate.weight", c.ffn_dim}, {p + "ffn_up.weight", c.ffn_dim}}, c.dim);
  }
  l.w_down = load.matrix(p + "ffn_down.weight", c.dim, c.ffn_dim);
  return l;
}

LayerWeights load_gpt2_layer(const TensorLoader& load, const ModelConfig& c, const std::string& p) {
  LayerWeights l;
  l.attn_norm = load.vector(p + "attn_norm.weight", c.dim);
  l.attn_norm_bias = load.vector(p + "attn_norm.bias", c.dim);
  l.wqkv = load.fused({{p + "attn_qkv.weight", 3 * c.dim}}, c.dim);
  l.bqkv = load.vector(p + "attn_qkv.bias", 3 * c.dim);
  l.wo = load.matrix(p + "attn_output.weight", c.dim, c.dim);
  l.bo = load.vector(p + "attn_output.bias", c.dim);
  l.ffn_norm = load.vector(p + "ffn_norm.weight", c.dim);
  l.ffn_norm_bias = load.vector(p + "ffn_norm.bias", c.dim);
  l.w_up = load.matrix(p + "ffn_up.weight", c.ffn_dim, c.dim);
  l.b_up = load.vector(p + "ffn_up.bias", c.ffn_dim);
  l.w_down = load.matrix(p + "ffn_down.weight", c.dim, c.ffn_dim);
  l.b_down = load.vector(p + "ffn_down.bias", c.dim);
  return l;
}

}  // namespace

ModelWeights load_weights(const gguf::GgufFile& file, const ModelConfig& c,
                          compute::Backend& backend) {
  const TensorLoader load(file, backend);
  const bool gpt2 = c.architecture == Architecture::kGpt2;
  ModelWeights w;
  w.token_embd = load.matrix("token_embd.weight", c.vocab_size, c.dim);
  if (gpt2) w.position_embd = load.matrix("position_embd.weight", c.context_length, c.dim);
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string prefix = "blk." + std::to_string(i) + ".";
    w.layers.push_back(gpt2 ? load_gpt2_layer(load, c, prefix) : load_llama_layer(load, c, prefix));
  }
  w.output_norm = load.vector("output_norm.weight", c.dim);
  if (gpt2) w.output_norm_bias = load.vector("output_norm.bias", c.dim);
  w.output = c.tied_output ? w.token_embd : load.matrix("output.weight", c.vocab_size, c.dim);
  if (c.rope_freq_factors) {
    w.rope_freq_factors = load.host_vector("rope_freqs.weight", c.head_dim / 2);
    for (const float factor : w.rope_freq_factors) {
      if (!(factor > 0.0f)) {
        throw ModelError(ModelError::Kind::kBadShape,
                         file.name() + ": tensor rope_freqs.weight holds " +
                             std::to_string(factor) + "; frequency factors must be positive");
      }
    }
  }
  return w;
}

}  // namespace servescope::model
