#include "engine/eval/random_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "engine/core/error.h"
#include "engine/eval/quantize_model.h"
#include "engine/gguf/gguf_format.h"
#include "engine/model/model_config.h"

namespace servescope::eval {
namespace {

using gguf::GgmlType;
using gguf::Value;

// Head size 64 and kv-heads = heads / 2 (as the bundled model), ffn ~ 8/3 dim in whole blocks;
// with the bundled 2048-token vocabulary the counts are 25.3M, 100.4M, 395.6M and 981.5M.
constexpr RandomModelPreset kPresets[] = {
    {"25M", {512, 8, 8, 4, 1376, 512}},
    {"100M", {768, 15, 12, 6, 2048, 512}},
    {"400M", {1536, 15, 24, 12, 4096, 512}},
    {"1B", {2048, 16, 32, 8, 8192, 512}},
};

// xoshiro256** (Blackman and Vigna), seeded through splitmix64: fast, and the same stream on
// every platform, so a seed names a file.
class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed) {
    for (uint64_t& word : s_) word = splitmix64(seed);
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  static uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::array<uint64_t, 4> s_{};
};

// A near-normal value with mean 0 and standard deviation `std`: the sum of four 16-bit uniforms
// of one 64-bit draw (Irwin-Hall), centred and scaled to unit variance. Tails stop at
// +-3.46 std, which timing does not notice; it is many times cheaper than Box-Muller.
void fill_near_normal(Xoshiro256& rng, float std, float* out, size_t n) {
  const float scale = std * std::sqrt(3.0f) / 65536.0f;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t r = rng.next();
    const int64_t sum = static_cast<int64_t>((r & 0xffff) + ((r >> 16) & 0xffff) +
                                             ((r >> 32) & 0xffff) + (r >> 48));
    out[i] = static_cast<float>(sum - 2 * 65535) * scale;
  }
}

// Emits a matrix of `rows` rows of `row_len` values, a few rows at a time.
gguf::GgufWriter::TensorProducer random_matrix(GgmlType type, int64_t row_len, int64_t rows,
                                               uint64_t seed) {
  return [=](const gguf::GgufWriter::ByteEmitter& emit) {
    Xoshiro256 rng(seed);
    const float std = static_cast<float>(random_weight_std(row_len));
    const int64_t chunk_rows = std::max<int64_t>(1, (int64_t{1} << 16) / row_len);
    const uint64_t chunk_row_bytes = gguf::row_bytes(type, row_len);
    std::vector<float> values(static_cast<size_t>(chunk_rows * row_len));
    std::vector<uint8_t> bytes(static_cast<size_t>(chunk_row_bytes) *
                               static_cast<size_t>(chunk_rows));
    for (int64_t row = 0; row < rows; row += chunk_rows) {
      const int64_t n_rows = std::min(chunk_rows, rows - row);
      const int64_t n = n_rows * row_len;
      fill_near_normal(rng, std, values.data(), static_cast<size_t>(n));
      gguf::quantize_row(type, values.data(), bytes.data(), n);
      emit(std::span<const uint8_t>(bytes.data(), chunk_row_bytes * static_cast<uint64_t>(n_rows)));
    }
  };
}

gguf::GgufWriter::TensorProducer ones(int64_t n) {
  return [n](const gguf::GgufWriter::ByteEmitter& emit) {
    const std::vector<float> values(static_cast<size_t>(n), 1.0f);
    emit(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(values.data()),
                                  values.size() * sizeof(float)));
  };
}

void require(bool ok, const std::string& reason) {
  if (!ok) throw InputError(reason);
}

std::string preset_names() {
  std::string names;
  for (const RandomModelPreset& p : kPresets)
    names += (names.empty() ? "" : ", ") + std::string(p.name);
  return names;
}

int64_t vocab_of(const gguf::GgufFile& source) {
  const Value* tokens = source.find("tokenizer.ggml.tokens");
  require(tokens != nullptr && std::holds_alternative<gguf::Array>(tokens->data),
          source.name() + " has no tokenizer (tokenizer.ggml.tokens) to copy");
  return static_cast<int64_t>(std::get<gguf::Array>(tokens->data).items.size());
}

// The tokenizer's arrays padded to `vocab` tokens with unused ones ("<unused_N>", score 0,
// type unused); token types are written even where the source left them out (then normal).
void pad_vocabulary(gguf::GgufWriter& writer, const gguf::GgufFile& source, int64_t vocab) {
  const auto source_vocab = static_cast<size_t>(vocab_of(source));
  const auto padded = static_cast<size_t>(vocab);
  if (padded == source_vocab) return;
  std::vector<Value> tokens =
      std::get<gguf::Array>(source.find("tokenizer.ggml.tokens")->data).items;
  for (size_t id = source_vocab; id < padded; ++id)
    tokens.push_back(Value::str("<unused_" + std::to_string(id) + ">"));
  writer.set("tokenizer.ggml.tokens", Value::array(gguf::ValueType::kString, std::move(tokens)));
  constexpr int32_t kNormalType = 1, kUnusedType = 5;  // llama.cpp's token types
  const auto padded_array = [&](const char* key, gguf::ValueType type, Value original, Value pad) {
    std::vector<Value> items;
    if (const Value* found = source.find(key)) {
      items = std::get<gguf::Array>(found->data).items;
    } else {
      items.assign(source_vocab, original);
    }
    items.resize(padded, pad);
    writer.set(key, Value::array(type, std::move(items)));
  };
  if (source.find("tokenizer.ggml.scores") != nullptr) {
    padded_array("tokenizer.ggml.scores", gguf::ValueType::kFloat32, Value::f32(0.0f),
                 Value::f32(0.0f));
  }
  padded_array("tokenizer.ggml.token_type", gguf::ValueType::kInt32, Value::i32(kNormalType),
               Value::i32(kUnusedType));
}

}  // namespace

int64_t random_model_vocab(const RandomModelSpec& spec, const gguf::GgufFile& tokenizer_source) {
  const int64_t source_vocab = vocab_of(tokenizer_source);
  if (spec.vocab_size == 0) return source_vocab;
  require(spec.vocab_size >= source_vocab && spec.vocab_size <= (int64_t{1} << 20),
          "the vocabulary (" + std::to_string(spec.vocab_size) + ") must hold the tokenizer's " +
              std::to_string(source_vocab) + " tokens and be at most 1048576");
  return spec.vocab_size;
}

std::span<const RandomModelPreset> random_model_presets() { return kPresets; }

RandomModelShape random_model_preset(std::string_view name) {
  for (const RandomModelPreset& p : kPresets) {
    if (p.name == name) return p.shape;
  }
  throw InputError("unknown model size '" + std::string(name) + "'; choose one of " +
                   preset_names());
}

void validate_shape(const RandomModelShape& s, GgmlType type) {
  require(s.dim > 0 && s.n_layers > 0 && s.n_heads > 0 && s.n_kv_heads > 0 && s.ffn_dim > 0,
          "dim, layers, heads, kv-heads and ffn must all be positive");
  require(s.dim <= 65536 && s.ffn_dim <= 262144 && s.n_layers <= 1024,
          "dim, ffn or layers is too large (at most 65536, 262144, 1024)");
  require(s.dim % s.n_heads == 0, "dim (" + std::to_string(s.dim) +
                                      ") must be a multiple of heads (" +
                                      std::to_string(s.n_heads) + ")");
  require(s.n_heads % s.n_kv_heads == 0, "heads (" + std::to_string(s.n_heads) +
                                             ") must be a multiple of kv-heads (" +
                                             std::to_string(s.n_kv_heads) + ")");
  require(
      (s.dim / s.n_heads) % 2 == 0,
      "the head size dim/heads (" + std::to_string(s.dim / s.n_heads) + ") must be even for RoPE");
  require(s.context_length >= 16 && s.context_length <= 32768,
          "context length must be in 16..32768");
  const int64_t block = gguf::block_elements(type);
  require(s.dim % block == 0 && s.ffn_dim % block == 0,
          "dim and ffn must be multiples of " + std::to_string(block) + " for " +
              weight_type_label(type) + " (its block size)");
}

int64_t parameter_count(const RandomModelShape& s, int64_t vocab_size) {
  const int64_t kv_dim = s.dim / s.n_heads * s.n_kv_heads;
  const int64_t per_layer =
      2 * s.dim * s.dim + 2 * s.dim * kv_dim + 3 * s.dim * s.ffn_dim + 2 * s.dim;
  return 2 * vocab_size * s.dim + s.n_layers * per_layer + s.dim;
}

uint64_t random_model_weight_bytes(const RandomModelShape& s, int64_t vocab_size, GgmlType type) {
  const int64_t norms = (2 * s.n_layers + 1) * s.dim;
  const auto matrix_elements = static_cast<uint64_t>(parameter_count(s, vocab_size) - norms);
  return matrix_elements / static_cast<uint64_t>(gguf::block_elements(type)) *
             static_cast<uint64_t>(gguf::block_bytes(type)) +
         static_cast<uint64_t>(norms) * sizeof(float);
}

double random_weight_std(int64_t fan_in) { return 1.0 / std::sqrt(static_cast<double>(fan_in)); }

gguf::GgufWriter random_model_writer(const RandomModelSpec& spec,
                                     const gguf::GgufFile& tokenizer_source) {
  const RandomModelShape& s = spec.shape;
  validate_shape(s, spec.type);
  const int64_t vocab = random_model_vocab(spec, tokenizer_source);
  const auto u32 = [](int64_t v) { return Value::u32(static_cast<uint32_t>(v)); };

  gguf::GgufWriter writer;
  writer.set("general.architecture", Value::str("llama"));
  writer.set("general.name", Value::str("servescope-random-" + spec.label + " (" +
                                        std::string(model::kRandomWeightsNote) + ")"));
  writer.set("general.description",
             Value::str("Random weights (seed " + std::to_string(spec.seed) +
                        ") for timing experiments; the text it generates is meaningless. "
                        "Tokenizer from " +
                        tokenizer_source.name() + "."));
  writer.set("general.file_type", Value::u32(llama_file_type(spec.type)));
  writer.set(std::string(gguf::kQuantizationVersionKey), Value::u32(gguf::kQuantizationVersion));
  writer.set(std::string(model::kRandomWeightsKey), Value::boolean(true));
  writer.set("servescope.random_seed", Value::u64(spec.seed));
  writer.set("llama.vocab_size", u32(vocab));
  writer.set("llama.context_length", u32(s.context_length));
  writer.set("llama.embedding_length", u32(s.dim));
  writer.set("llama.block_count", u32(s.n_layers));
  writer.set("llama.feed_forward_length", u32(s.ffn_dim));
  writer.set("llama.rope.dimension_count", u32(s.dim / s.n_heads));
  writer.set("llama.attention.head_count", u32(s.n_heads));
  writer.set("llama.attention.head_count_kv", u32(s.n_kv_heads));
  writer.set("llama.attention.layer_norm_rms_epsilon", Value::f32(1e-5f));
  writer.set("llama.rope.freq_base", Value::f32(10000.0f));
  for (const auto& [key, value] : tokenizer_source.metadata()) {
    if (key.starts_with("tokenizer.")) writer.set(key, value);
  }
  pad_vocabulary(writer, tokenizer_source, vocab);

  // Each tensor has its own stream, seeded by (seed, index): identical seeds, identical files.
  uint64_t seed_state = spec.seed;
  const auto matrix = [&](const std::string& name, int64_t row_len, int64_t rows) {
    writer.add_tensor_streamed(
        name, spec.type, {row_len, rows},
        random_matrix(spec.type, row_len, rows, Xoshiro256::splitmix64(seed_state)));
  };
  const auto norm = [&](const std::string& name) {
    writer.add_tensor_streamed(name, GgmlType::F32, {s.dim}, ones(s.dim));
  };
  const int64_t kv_dim = s.dim / s.n_heads * s.n_kv_heads;
  matrix("token_embd.weight", s.dim, vocab);
  for (int64_t i = 0; i < s.n_layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    norm(p + "attn_norm.weight");
    matrix(p + "attn_q.weight", s.dim, s.dim);
    matrix(p + "attn_k.weight", s.dim, kv_dim);
    matrix(p + "attn_v.weight", s.dim, kv_dim);
    matrix(p + "attn_output.weight", s.dim, s.dim);
    norm(p + "ffn_norm.weight");
    matrix(p + "ffn_gate.weight", s.dim, s.ffn_dim);
    matrix(p + "ffn_up.weight", s.dim, s.ffn_dim);
    matrix(p + "ffn_down.weight", s.ffn_dim, s.dim);
  }
  norm("output_norm.weight");
  matrix("output.weight", s.dim, vocab);
  return writer;
}

}  // namespace servescope::eval
