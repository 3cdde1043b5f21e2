// The CPU reference backend: plain loops for the element-wise work, OpenBLAS for matrix
// products. Quantised weights stay quantised in memory. A product over a few tokens (decode)
// takes dot products directly on the stored blocks; a product over many tokens (prefill)
// dequantises a tile of weight rows at a time into float32 and hands it to BLAS. Both are
// exact with respect to the dequantised weights up to float summation order.
#pragma once

#include "engine/compute/backend.h"

namespace servescope::compute {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }

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
            float freq_base) override;
  void store_kv(const Tensor& keys, const Tensor& values, std::span<const int32_t> slots,
                KvStore& store) override;
  using Backend::attention;
  void attention(const Tensor& q, const KvStore& store, const AttentionShape& shape,
                 const AttentionBatch& batch, Tensor& out, Tensor* weights) override;
  void add(Tensor& x, const Tensor& y) override;
  void add_rms_norm(Tensor& x, const Tensor& y, const Tensor& weight, float eps,
                    Tensor& out) override;
  void add_layer_norm(Tensor& x, const Tensor& y, const Tensor& weight, const Tensor& bias,
                      float eps, Tensor& out) override;
  void rope_qk(Tensor& q, Tensor& k, int64_t head_dim, std::span<const int32_t> positions,
               float freq_base) override;
  void gather_rows(const Tensor& src, std::span<const int32_t> rows, Tensor& dst) override;
  void silu_mul(const Tensor& gate, const Tensor& up, Tensor& out) override;
  void gelu(Tensor& x) override;

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
  // Up to this many tokens, quantised products run as dot products on the stored blocks
  // (each weight byte read once); more tokens amortise dequantising a tile for BLAS.
  static constexpr int64_t kMaxRowsForBlockDots = 4;
  void matmul_on_blocks(const Tensor& x, const WeightMatrix& w, Tensor& out);
  void matmul_on_tiles(const Tensor& x, const WeightMatrix& w, Tensor& out);

  std::vector<float> dequantize_scratch_;  // one tile of weight rows, reused across products
  // One sequence's keys and values, gathered from their slots and dequantised.
  std::vector<float> context_keys_;
  std::vector<float> context_values_;
  Profile profile_;
};

}  // namespace servescope::compute
