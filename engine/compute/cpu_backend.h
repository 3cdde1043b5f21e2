// The CPU reference backend: plain loops for the element-wise work, OpenBLAS for matrix
// products over many tokens. Quantised weights stay quantised in memory; F32 and F16 weights are
// repacked at upload into panels of 16 rows interleaved by column (cpu_panel_dot.h). A product
// with F32/F16 weights runs the panel kernel at every token count; with the block types, a
// product over up to 32 tokens (decode, and decode of a batch) takes dot products on the stored
// rows, each weight row read once for all tokens, and one over more tokens (prefill)
// dequantises a tile of weight rows at a time into float32 and hands it to BLAS. All are exact
// with respect to the dequantised weights up to float summation order.
//
// Products are split by weight rows over a persistent thread pool (`threads`, default the
// physical cores); OpenBLAS itself runs single-threaded inside each tile, so the two never
// oversubscribe the cores. A row's result does not depend on the thread count.
#pragma once

#include <memory>

#include "engine/compute/backend.h"
#include "engine/compute/cpu_int8_dot.h"
#include "engine/compute/cpu_thread_pool.h"

namespace servescope::compute {

class ActivationRecycler;  // cpu_backend.cpp

class CpuBackend final : public Backend {
 public:
  // threads: 0 for CpuThreadPool::default_threads(); InputError below 0. quantised_activations:
  // products with Q8_0 / Q4_0 / Q4_K weights quantise the activations to 8 bits per block of 32 and
  // take integer dot products (cpu_int8_dot.h), at every token count.
  explicit CpuBackend(int threads = 0, bool quantised_activations = false);
  std::string name() const override { return "cpu"; }
  int threads() const { return pool_->threads(); }
  bool quantised_activations() const { return quantised_activations_; }
  // Working memory, as a device reports it by purpose: the most activation memory held at
  // once (reusable buffers included) and the threads' scratch for products and attention.
  // Call it between steps (the scratch is the threads' during one).
  uint64_t working_bytes() const;

  Tensor create_tensor(int64_t rows, int64_t cols, BufferPurpose purpose) override;
  KvStore create_kv_store(gguf::GgmlType type, int64_t slots, int64_t kv_dim) override;
  WeightMatrix upload_matrix(gguf::GgmlType type, int64_t rows, int64_t cols,
                             std::span<const uint8_t> data) override;
  Tensor upload_vector(std::span<const float> values) override;
  void write(Tensor& dst, std::span<const float> values) override;
  std::vector<float> read(const Tensor& src) override;
  std::vector<uint8_t> read_kv_bytes(const KvStore& store, bool values) override;

  void embed(const WeightMatrix& table, std::span<const int32_t> ids, Tensor& out) override;
  void rms_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) override;
  void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                  Tensor& out) override;
  void matmul(const Tensor& x, const WeightMatrix& w, const Tensor* bias, Tensor& out) override;
  void rope(Tensor& x, int64_t head_dim, std::span<const int32_t> positions,
            const RopeSpec& rope) override;
  void store_kv(const Tensor& keys, const Tensor& values, std::span<const int32_t> slots,
                KvStore& store) override;
  void copy_kv_slots(KvStore& store, int32_t from, int32_t to, int32_t count) override;
  using Backend::attention;
  void attention(const Tensor& q, const KvStore& store, const AttentionShape& shape,
                 const AttentionBatch& batch, Tensor& out, Tensor* weights) override;
  void add(Tensor& x, const Tensor& y) override;
  void add_rms_norm(Tensor& x, const Tensor& y, const Tensor& weight, float eps,
                    Tensor& out) override;
  void add_layer_norm(Tensor& x, const Tensor& y, const Tensor& weight, const Tensor& bias,
                      float eps, Tensor& out) override;
  void rope_qk(Tensor& q, Tensor& k, int64_t head_dim, std::span<const int32_t> positions,
               const RopeSpec& rope) override;
  void gather_rows(const Tensor& src, std::span<const int32_t> rows, Tensor& dst) override;
  void silu_mul(const Tensor& gate, const Tensor& up, Tensor& out) override;
  void gelu(Tensor& x) override;
  void gelu_mul(const Tensor& gate, const Tensor& up, Tensor& out) override;
  void scale(Tensor& x, float factor) override;
  void soft_cap(Tensor& x, float cap) override;
  void rms_norm_heads(Tensor& x, const Tensor& weight, int64_t head_dim, float eps) override;

  // Every operation above is timed with the steady clock (two clock reads per call); with
  // spans on, each also appends its span.
  telemetry::KernelTimes take_kernel_times() override;
  bool set_kernel_spans(bool on) override;
  void set_span_layer(int64_t layer) override { profile_.layer = layer; }
  std::vector<telemetry::KernelSpan> take_kernel_spans() override;

  // What the operations' timers add to.
  struct Profile {
    telemetry::KernelTimes times;  // since the last take_kernel_times()
    bool spans_on = false;
    int64_t layer = -1;
    std::vector<telemetry::KernelSpan> spans;  // since the last take_kernel_spans()
  };

 private:
  // Up to this many tokens, products with block-type weights run on the stored rows (each
  // weight byte read once for all tokens, and a decode batch's sequences get their bits
  // alone); more tokens amortise dequantising a tile (matmul_on_tiles). Measured with
  // `bench --sweep` (load 3-4): the Q8_0/Q4_0 row kernels beat dequantising for sgemm by 10-30%
  // at 16 and 32 tokens.
  static constexpr int64_t kMaxRowsForRowKernels = 32;
  void matmul_on_rows(const Tensor& x, const WeightMatrix& w, Tensor& out);
  // F32 / F16 weights, stored in panels (cpu_panel_dot.h): the panel kernel at every token
  // count. It beats OpenBLAS's sgemm on the same blocks at 17..256 tokens too, by 12-20%
  // (`servescope-cpu-products-bench`, 1 thread: 1010 against 1207 us a layer at 128 tokens).
  void matmul_on_panels(const Tensor& x, const WeightMatrix& w, Tensor& out);
  // 8-bit activations: Q4_0, Q5_0, Q8_0, Q4_K and Q6_K stored interleaved
  // (cpu_int8_interleaved.h), the tokens first quantised into quantised_x_.
  void matmul_on_interleaved(const Tensor& x, const WeightMatrix& w, Tensor& out);
  void quantise_tokens(const Tensor& x);
  // Exact activations, up to kMaxRowsForRowKernels tokens, on weights stored interleaved with
  // AVX-512 (cpu_exact_interleaved.h): the tokens first scaled into prepared_x_.
  void matmul_exact_on_interleaved(const Tensor& x, const WeightMatrix& w, Tensor& out);
  // Runs body(first_row, end_row) over w's groups of 16 interleaved rows on the pool, in
  // chunks of about chunk_factor x kMultiplyAddsPerChunk multiply-adds.
  template <class Body>
  void on_row_groups(const WeightMatrix& w, int64_t tokens, int64_t chunk_factor, Body&& body);
  // Many tokens against block-type weights: tiles of rows dequantised, each multiplied by the
  // F32 panel kernel (AVX-512) or OpenBLAS's sgemm, on a thread's scratch.
  void matmul_on_tiles(const Tensor& x, const WeightMatrix& w, Tensor& out);
  void multiply_tile_on_panels(const Tensor& x, const WeightMatrix& w, int64_t r0, int64_t rows,
                               std::vector<float>& scratch, Tensor& out);
  void multiply_tile_with_sgemm(const Tensor& x, const WeightMatrix& w, int64_t r0, int64_t rows,
                                std::vector<float>& scratch, Tensor& out);

  void warm_up_blas();

  std::unique_ptr<CpuThreadPool> pool_;
  // Freed activation memory, reused by the next tensors of the same size.
  std::shared_ptr<ActivationRecycler> recycler_;
  bool quantised_activations_ = false;
  std::vector<ActivationBlock> quantised_x_;  // the tokens of the current product, quantised
  std::vector<int32_t> block_offsets_;        // and what their blocks add (interleaved)
  std::vector<float> prepared_x_;             // the current product's exact activations, scaled
  // Per thread: one tile of weight rows, reused across products.
  std::vector<std::vector<float>> dequantize_scratch_;
  // Per thread: one sequence's keys and values, gathered from their slots and dequantised.
  struct AttentionScratch {
    std::vector<float> keys;
    std::vector<float> values;
    std::vector<float> scores;
  };
  std::vector<AttentionScratch> attention_scratch_;
  // RoPE's cos and sin per position and pair, for the last head size and RopeSpec used.
  struct RopeTable {
    int64_t head_dim = 0;
    RopeSpec spec;
    std::vector<float> cos_sin;  // [position][pair][cos, sin]
  };
  RopeTable rope_table_;
  // Rotates each head's pairs of x by its row's position (rope and rope_qk), from rope_table_.
  void rotate_pairs(Tensor& x, int64_t head_dim, std::span<const int32_t> positions,
                    const RopeSpec& rope);
  // body(begin, end) over row ranges covering [0, rows), split over the pool when there is
  // enough work (prefill's many tokens), on the calling thread otherwise (decode). Every row is
  // computed whole on one thread, so elementwise results do not depend on the split.
  template <class Body>
  void on_row_ranges(int64_t rows, int64_t cols, Body&& body);
  // Prefill's attention: one sequence's query rows [begin, end) (a tile of at most
  // kAttentionTileRows) for the query heads of KV head kv_head, as two small products per head
  // (scores = Q K^T, out = P V) with the softmax between them.
  struct AttentionTile {
    int64_t begin = 0;
    int64_t end = 0;
    int64_t kv_head = 0;
  };
  static constexpr int64_t kAttentionTileRows = 16;
  void attend_tile(const Tensor& q, const KvStore& store, const AttentionShape& shape,
                   const AttentionBatch& batch, Tensor& out, Tensor* weights,
                   const AttentionTile& tile, AttentionScratch& scratch);
  // Attention of query rows [begin, end), with one thread's scratch.
  void attend_rows(const Tensor& q, const KvStore& store, const AttentionShape& shape,
                   const AttentionBatch& batch, Tensor& out, Tensor* weights, int64_t begin,
                   int64_t end, AttentionScratch& scratch);
  // The same for KV heads [first_kv_head, end_kv_head) only, reading the stored keys and
  // values in place (cpu_stored_attention.h), for the stores and CPUs that has kernels for.
  void attend_rows_in_place(const Tensor& q, const KvStore& store, const AttentionShape& shape,
                            const AttentionBatch& batch, Tensor& out, Tensor* weights,
                            int64_t begin, int64_t end, int64_t first_kv_head, int64_t end_kv_head,
                            AttentionScratch& scratch);
  Profile profile_;
};

}  // namespace servescope::compute
