// The transformer forward pass, written once against compute::Backend for both
// architectures. Read `Transformer::forward` top to bottom: it is the whole model.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "engine/compute/backend.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"

namespace servescope::model {

// The keys and values of many sequences: one KvStore per layer over a shared pool of slots.
// Block tables (engine/serving) decide which slots a sequence's positions occupy.
struct PagedKvCache {
  std::vector<compute::KvStore> layers;
  gguf::GgmlType type = gguf::GgmlType::F32;
  int64_t slots = 0;
};

// InputError for a KV type other than F32, F16 or Q8_0 (or Q8_0 with a kv_dim that is not a
// multiple of 32) or fewer than one slot.
PagedKvCache create_paged_kv_cache(const ModelConfig& config, compute::Backend& backend,
                                   gguf::GgmlType type, int64_t slots);

// One sequence on its own: position t lives in slot t.
struct KvCache {
  PagedKvCache storage;
  std::vector<int32_t> slots;  // 0, 1, ..., capacity - 1
  int64_t capacity = 0;        // tokens
  int64_t length = 0;          // tokens stored so far (= position of the next token)
};

KvCache create_kv_cache(const ModelConfig& config, compute::Backend& backend, int64_t capacity,
                        gguf::GgmlType type = gguf::GgmlType::F32);

// Which of a sequence's new tokens get logits.
enum class LogitRows { kNone, kLast, kAll };

// One sequence's share of a batched forward step.
struct SequenceStep {
  std::span<const int32_t> tokens;  // new tokens, at positions start, start + 1, ...
  int64_t start = 0;                // tokens of this sequence already in the cache
  std::span<const int32_t> slots;   // KV slot of each position 0 .. start + tokens.size() - 1
  LogitRows logits = LogitRows::kLast;
};

// Which attention weights forward passes keep: an opt-in capture, off unless requested.
struct AttentionCapture {
  int64_t layer = -1;  // -1: every layer
  int64_t head = -1;   // -1: every head
};

// The softmax weights one layer's head used in the last forward pass (after the causal mask,
// with GQA heads sharing their KV head, on keys rounded to the KV type). Row i belongs to query
// row i of the pass: sequence sequences[i] of the batch (its index in forward_batch's span; 0
// for forward), at position positions[i] of that sequence, and holds positions[i] + 1 weights
// over that sequence's positions 0 ..= positions[i] (they sum to 1).
struct AttentionWeights {
  int64_t layer = 0;
  int64_t head = 0;
  std::vector<int32_t> sequences;
  std::vector<int32_t> positions;
  std::vector<std::vector<float>> rows;
};

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

  // One step over a ragged batch: every sequence processes its new tokens, writes their keys
  // and values into its slots and attends only to its own positions. The result equals
  // running each sequence alone. Returns the requested logit rows, sequence after sequence,
  // row-major [rows x vocab]. InputError for an empty batch or sequence, a token id outside
  // the vocabulary, a sequence past the context, or missing or out-of-range slots.
  std::vector<float> forward_batch(std::span<const SequenceStep> batch, PagedKvCache& cache);

  const ModelConfig& config() const { return config_; }
  compute::Backend& backend() { return backend_; }

  // The element type of the KV caches new_cache makes (F32 unless chosen): a runtime choice,
  // independent of the weights' type. InputError for a type create_kv_store refuses.
  void set_kv_type(gguf::GgmlType type);
  gguf::GgmlType kv_type() const { return kv_type_; }
  // An empty single-sequence cache of `capacity` tokens in kv_type().
  KvCache new_cache(int64_t capacity);

  // From the next forward pass on, keep the attention weights of `capture`'s layers and heads
  // (nullopt: keep none, the default, which costs nothing). InputError for a layer or head
  // outside the model.
  void set_attention_capture(std::optional<AttentionCapture> capture);
  // The weights captured by the last forward pass, layer by layer, head by head within a layer.
  const std::vector<AttentionWeights>& captured_attention() const { return captured_; }

 private:
  // The blocks read the normalised residual stream h and return their output; the caller adds
  // it to the residual stream together with the next norm (add_norm), which the Vulkan backend
  // runs as one kernel. weights: where attention writes its softmax weights (a capture), or null.
  compute::Tensor attention_block(size_t layer_index, compute::KvStore& kv,
                                  const compute::Tensor& h, const compute::AttentionBatch& batch,
                                  std::span<const int32_t> new_slots, compute::Tensor* weights);
  bool captures_layer(int64_t layer) const;
  // Reads the capture tensors of the pass into captured_.
  void collect_captured(std::span<const std::pair<int64_t, compute::Tensor>> captures,
                        const std::vector<int32_t>& sequences,
                        const std::vector<int32_t>& positions);
  compute::Tensor feed_forward_block(const LayerWeights& layer, const compute::Tensor& h);
  // gemma2/gemma3: a block's output normed on its own before it joins the residual stream.
  compute::Tensor post_norm(const compute::Tensor& block_out, const compute::Tensor& weight);
  // out = x * W^T (+ bias) for the parts of W side by side: one product per part.
  void project(const compute::Tensor& x, const FusedMatrix& w, const compute::Tensor* bias,
               compute::Tensor& out);
  // x += *residual (when not null), then out = the architecture's norm (RMSNorm or LayerNorm)
  // of x: a block's output joins the residual stream in the same operation as the next norm.
  void add_norm(compute::Tensor& x, const compute::Tensor* residual, const compute::Tensor& weight,
                const compute::Tensor& bias, compute::Tensor& out);
  void check_input(const SequenceStep& step, const PagedKvCache& cache) const;
  // The rows of the batch whose logits are wanted, in order.
  static std::vector<int32_t> logit_rows(std::span<const SequenceStep> batch);
  // Those rows of t: a view when they are consecutive, else gathered into a new tensor.
  compute::Tensor rows_of(const compute::Tensor& t, std::span<const int32_t> rows);
  compute::Tensor activation(int64_t rows, int64_t cols);
  // Creates and drops the activations of a prefill of `tokens` tokens, at load: a backend that
  // reuses freed memory (the CPU backend) then starts the first forward pass on pages already
  // faulted in, as a warmed-up one does (llama.cpp reserves its compute buffer likewise).
  void reserve_activations(int64_t tokens);
  static constexpr int64_t kReservedPrefillTokens = 512;

  ModelConfig config_;
  ModelWeights weights_;
  // Per layer: its RoPE and attention variant (local layers differ in gemma2 and gemma3).
  std::vector<compute::RopeSpec> layer_rope_;
  std::vector<compute::AttentionShape> layer_attention_;
  compute::Backend& backend_;
  gguf::GgmlType kv_type_ = gguf::GgmlType::F32;
  std::optional<AttentionCapture> capture_;
  std::vector<AttentionWeights> captured_;
};

}  // namespace servescope::model
