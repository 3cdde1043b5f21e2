// The compute backend interface. The transformer's forward pass is written once against it;
// the CPU reference (OpenBLAS) and the Vulkan backend implement it.
//
// All activations are float32 matrices, row-major, one row per token. An operation may be
// executed at once (CPU) or recorded and submitted later (Vulkan); `read` waits for
// everything recorded before it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/gguf/ggml_types.h"
#include "engine/telemetry/records.h"

namespace servescope::compute {

// What a buffer is for, so a backend can account its memory per purpose.
enum class BufferPurpose { kWeights, kKvCache, kActivations, kScratch };

// Storage owned by a backend. Each backend derives its own kind.
class Buffer {
 public:
  virtual ~Buffer() = default;
};

// A float32 matrix, or a view of some columns of one: element (r, c) lives at
// buffer[offset + r * row_stride + c].
struct Tensor {
  std::shared_ptr<Buffer> buffer;
  int64_t offset = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t row_stride = 0;

  // Columns [first, first + count) of every row, sharing storage.
  Tensor columns(int64_t first, int64_t count) const;
  // Rows [first, first + count), sharing storage.
  Tensor row_range(int64_t first, int64_t count) const;
  int64_t size() const { return rows * cols; }
};

// A weight matrix [rows x cols] kept in its file type (F32, F16, Q8_0 or Q4_0);
// a linear layer computes x * W^T, so rows = output features, cols = input features.
struct WeightMatrix {
  std::shared_ptr<Buffer> buffer;
  gguf::GgmlType type = gguf::GgmlType::F32;
  int64_t rows = 0;
  int64_t cols = 0;
};

// The shape of multi-head attention with grouped-query (GQA) key/value heads, and the
// architecture's variations on softmax(q k^T / sqrt(head_dim)) v.
struct AttentionShape {
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  float scale = 0.0f;    // multiplies q.k; 0: 1 / sqrt(head_dim)
  float softcap = 0.0f;  // > 0: a score s becomes softcap * tanh(s / softcap) (gemma2)
  int64_t window = 0;    // > 0: a query at position p sees only keys at p - window < t <= p

  float score_scale() const;
};

// How RoPE turns a position into angles: pair i of a head of size d turns by
//   position * freq_scale * freq_base^(-2i/d) / freq_factors[i]
// (freq_factors empty: all 1). The pairs are (2i, 2i+1) in GGUF's "normal" mode (llama) and
// (i, i + d/2) in "neox" mode (qwen2, phi3, gemma).
struct RopeSpec {
  RopeSpec() = default;
  // Plain RoPE with this base (implicit: a base alone is the common case).
  RopeSpec(float base) : freq_base(base) {}  // NOLINT(google-explicit-constructor)

  float freq_base = 10000.0f;
  float freq_scale = 1.0f;          // linear scaling: 1 / rope.scaling.factor
  std::vector<float> freq_factors;  // per pair: llama 3's rope_freqs.weight
  bool neox = false;

  // The angle of pair i at `position`, in double precision (both backends build their cos/sin
  // tables from it).
  double angle(int64_t position, int64_t pair, int64_t head_dim) const;
  bool operator==(const RopeSpec&) const = default;
};

// The keys and values of one layer for every sequence of a paged KV cache: `slots` token rows
// of kv_dim = n_kv_heads * head_dim elements each, for keys and for values, stored as `type`
// (F32, F16 or Q8_0) in exactly GGML's row layout, so a row costs row_bytes(type, kv_dim).
// Which slot holds which sequence's token is the caller's business (block tables).
struct KvStore {
  std::shared_ptr<Buffer> keys;
  std::shared_ptr<Buffer> values;
  gguf::GgmlType type = gguf::GgmlType::F32;
  int64_t slots = 0;
  int64_t kv_dim = 0;
};

// InputError unless type is F32, F16 or Q8_0, slots >= 1 and kv_dim >= 1 (a multiple of 32
// for Q8_0). Backends call it from create_kv_store.
void check_kv_store_shape(gguf::GgmlType type, int64_t slots, int64_t kv_dim);
// InputError unless both runs of `count` slots (count >= 0) lie in the store and do not
// overlap. Backends call it from copy_kv_slots.
void check_kv_slot_copy(const KvStore& store, int32_t from, int32_t to, int32_t count);

// Where each query row of a ragged batch sits and which KV slots it sees. Query row i is at
// position positions[i] of its sequence and attends (causally) to the slots
//   slot_map[context_offsets[i] + t]  for t = 0 ..= positions[i],
// i.e. slot_map holds, sequence after sequence, the slot of each of its positions, and every
// row of a sequence points at the start of that sequence's run. Rows of different sequences
// never see each other's slots.
struct AttentionBatch {
  std::vector<int32_t> positions;        // per query row
  std::vector<int32_t> context_offsets;  // per query row
  std::vector<int32_t> slot_map;         // per sequence: slot of positions 0 .. last
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  // --- memory ---------------------------------------------------------------------------
  virtual Tensor create_tensor(int64_t rows, int64_t cols, BufferPurpose purpose) = 0;
  // Zero-filled KV storage (BufferPurpose::kKvCache). InputError for a type other than F32,
  // F16 or Q8_0, or a Q8_0 kv_dim that is not a multiple of 32.
  virtual KvStore create_kv_store(gguf::GgmlType type, int64_t slots, int64_t kv_dim) = 0;
  // `data` holds rows * row_bytes(type, cols) bytes in GGML's layout.
  virtual WeightMatrix upload_matrix(gguf::GgmlType type, int64_t rows, int64_t cols,
                                     std::span<const uint8_t> data) = 0;
  virtual Tensor upload_vector(std::span<const float> values) = 0;
  virtual void write(Tensor& dst, std::span<const float> values) = 0;  // row-major, dense
  // Waits for all recorded work, then copies the tensor out (row-major, dense).
  virtual std::vector<float> read(const Tensor& src) = 0;
  // Waits for recorded work, then copies out the raw bytes of a KV store's keys (or values):
  // slots * row_bytes(type, kv_dim), in GGML's row layout (e.g. to measure what a cache type
  // stores).
  virtual std::vector<uint8_t> read_kv_bytes(const KvStore& store, bool values) = 0;

  // --- operations -------------------------------------------------------------------------
  // out[i] = row ids[i] of table (dequantised). Used for token and position embeddings.
  virtual void embed(const WeightMatrix& table, std::span<const int32_t> ids, Tensor& out) = 0;
  // out = x / sqrt(mean(x^2) + eps) * weight, per row.
  virtual void rms_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) = 0;
  // out = (x - mean) / sqrt(var + eps) * weight + bias, per row (biased variance).
  virtual void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                          Tensor& out) = 0;
  // out = x * W^T (+ bias). x: [n x cols], out: [n x rows]. bias may be null.
  virtual void matmul(const Tensor& x, const WeightMatrix& w, const Tensor* bias, Tensor& out) = 0;
  // Rotates the pairs of every head of row r by rope.angle(positions[r], i, head_dim), in
  // place: adjacent pairs (2i, 2i+1) in GGUF's "normal" mode, (i, i + d/2) in "neox" mode.
  virtual void rope(Tensor& x, int64_t head_dim, std::span<const int32_t> positions,
                    const RopeSpec& rope) = 0;
  // Writes row i of keys and of values into slot slots[i] of the store, converted to the
  // store's type (Q8_0 rows are quantised as GGML's reference quantiser does).
  virtual void store_kv(const Tensor& keys, const Tensor& values, std::span<const int32_t> slots,
                        KvStore& store) = 0;
  // Copies the keys and values of slots from .. from + count - 1 into slots to .. to + count - 1
  // of the same store, byte for byte, after the work recorded before it (copy-on-write of a
  // shared KV block). The two runs must not overlap; InputError for slots outside the store.
  virtual void copy_kv_slots(KvStore& store, int32_t from, int32_t to, int32_t count) = 0;
  // Causal attention of a ragged batch over a paged KV store: softmax(q k^T / sqrt(head_dim)) v
  // per query head (or with shape's own scale, soft-cap and sliding window), with grouped-query
  // heads sharing KV heads; keys and values are read from the slots `batch` gives each row
  // (dequantised from the store's type).
  void attention(const Tensor& q, const KvStore& store, const AttentionShape& shape,
                 const AttentionBatch& batch, Tensor& out) {
    attention(q, store, shape, batch, out, nullptr);
  }
  // The same, and, when `weights` is not null (an opt-in capture), also the softmax
  // probabilities the kernel used: row i * n_heads + h of `weights` gets query row i's head h
  // weights over its context positions t = 0 ..= positions[i] in columns t (columns beyond
  // are left as they were). weights: [rows * n_heads x at least max position + 1].
  virtual void attention(const Tensor& q, const KvStore& store, const AttentionShape& shape,
                         const AttentionBatch& batch, Tensor& out, Tensor* weights) = 0;
  virtual void add(Tensor& x, const Tensor& y) = 0;  // x += y
  // Explicit fusions: one operation where a backend can run them as one kernel (Vulkan: one
  // dispatch); a backend without a fused kernel composes its plain operations.
  // x += y, then out = rms_norm(x): the residual add that ends a block and the next block's
  // norm. x holds the sum afterwards.
  virtual void add_rms_norm(Tensor& x, const Tensor& y, const Tensor& weight, float eps,
                            Tensor& out) = 0;
  // x += y, then out = layer_norm(x) (GPT-2's blocks).
  virtual void add_layer_norm(Tensor& x, const Tensor& y, const Tensor& weight, const Tensor& bias,
                              float eps, Tensor& out) = 0;
  // rope(q) and rope(k) with the same positions (a llama layer's queries and keys). q and k
  // must not share elements (they may be disjoint column views of one fused projection);
  // the Vulkan backend, which rotates both in one dispatch, refuses an overlap (InputError).
  virtual void rope_qk(Tensor& q, Tensor& k, int64_t head_dim, std::span<const int32_t> positions,
                       const RopeSpec& rope) = 0;
  // dst row i = src row rows[i] (e.g. gathers a batch's logit rows); dst.rows == rows.size().
  virtual void gather_rows(const Tensor& src, std::span<const int32_t> rows, Tensor& dst) = 0;
  virtual void silu_mul(const Tensor& gate, const Tensor& up, Tensor& out) = 0;  // silu(g)*u
  virtual void gelu(Tensor& x) = 0;  // tanh form, in place
  // out = gelu(gate) * up, GELU in its tanh form (gemma's GeGLU). out may be the gate itself.
  virtual void gelu_mul(const Tensor& gate, const Tensor& up, Tensor& out) = 0;
  // x *= factor, in place (gemma's embeddings times sqrt(dim)).
  virtual void scale(Tensor& x, float factor) = 0;
  // x = cap * tanh(x / cap), in place (gemma2's final logit soft-capping); cap > 0.
  virtual void soft_cap(Tensor& x, float cap) = 0;
  // RMSNorm of every head_dim-wide group of columns on its own, all with the same weight
  // [head_dim], in place (gemma3's per-head query and key norms). x.cols % head_dim == 0.
  virtual void rms_norm_heads(Tensor& x, const Tensor& weight, int64_t head_dim, float eps) = 0;

  // --- profiling --------------------------------------------------------------------------
  // Time spent per kernel class (matmul, attention, norm, other) since the previous call,
  // which resets it: the engine takes it once per step. A backend that does not time its
  // kernels reports zeros.
  virtual telemetry::KernelTimes take_kernel_times() { return {}; }
  // Opt-in per-operation spans (off by default, and free then): one per operation on the CPU,
  // one per dispatch on Vulkan. Turning them on or off drops what was recorded; returns whether
  // this backend records them (false: it cannot time single operations, and
  // take_kernel_spans() stays empty).
  virtual bool set_kernel_spans(bool /*on*/) { return false; }
  // Why set_kernel_spans(true) returned false, in words for the record (empty when it did not).
  virtual std::string why_no_kernel_spans() const {
    return name() + " backend does not time single operations";
  }
  // The transformer layer the following operations belong to; -1 outside the layers.
  virtual void set_span_layer(int64_t /*layer*/) {}
  // The spans since the previous call, which resets them, in the order the operations ran;
  // times in milliseconds since the steady clock's epoch.
  virtual std::vector<telemetry::KernelSpan> take_kernel_spans() { return {}; }
};

enum class BackendKind { kCpu, kVulkan };

// Which backend to create and, for Vulkan, on which device.
struct BackendChoice {
  BackendChoice(BackendKind kind_ = BackendKind::kCpu, std::optional<uint32_t> device_ = {})
      : kind(kind_), device(device_) {}
  BackendKind kind;
  // CPU: worker threads for the matrix products, 0 for the physical cores. (Vulkan ignores it.)
  int threads = 0;
  // CPU: quantise activations to 8 bits per block of 32 before products with Q8_0 / Q4_0
  // weights and take integer dot products (llama.cpp's method: fewer instructions per weight,
  // plus the activations' rounding error). Off: the exact float path. (Vulkan ignores it.)
  bool quantised_activations = false;
  // Vulkan: an index into vulkan::list_devices() (compute::list_devices() lists the same
  // devices); default: the best device. The CPU backend has one device, 0.
  std::optional<uint32_t> device;
};

// Parses "cpu" / "vulkan"; InputError naming the choices otherwise.
BackendKind parse_backend_kind(const std::string& name);
// Creates a backend; BackendError with a message a person can act on if it cannot run here
// (InputError for a CPU device other than 0).
std::unique_ptr<Backend> make_backend(const BackendChoice& choice);

}  // namespace servescope::compute
