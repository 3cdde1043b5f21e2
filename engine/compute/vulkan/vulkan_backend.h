// The Vulkan compute backend: the same transformer as the CPU reference, on any Vulkan 1.1
// device (a discrete or integrated GPU, or Mesa's lavapipe on the CPU). Operations are
// recorded into one command buffer per step and submitted once, when `read` needs a result.
#pragma once

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "engine/compute/backend.h"
#include "engine/compute/vulkan/command_recorder.h"
#include "engine/compute/vulkan/device_memory.h"
#include "engine/compute/vulkan/pipelines.h"
#include "engine/compute/vulkan/step_timings.h"
#include "engine/compute/vulkan/vulkan_context.h"

namespace servescope::compute::vulkan {

// Which kernels run prefill matrix products (steps of more than kMatrixVectorMaxTokens tokens)
// and attention. GPUs want workgroups that cooperate through shared memory and barriers; CPU
// implementations such as lavapipe emulate both at a high price and want independent
// invocations with wide loads instead.
enum class KernelStyle {
  kAuto,              // kWorkgroupTiles on GPUs, kRowPerInvocation on CPU devices
  kWorkgroupTiles,    // matmul_tiled (shared-memory tiles), attention (workgroup per head)
  kRowPerInvocation,  // matmul_lanes register tiles (or matmul_vec passes of 8 tokens),
                      // attention_rows (invocation per head)
};

struct VulkanBackendOptions {
  ContextOptions context;
  // Largest byte range bound to one shader binding; 0 = the device's maxStorageBufferRange
  // (or, as a test hook, SERVESCOPE_VULKAN_MAX_BINDING_BYTES from the environment). Weights
  // larger than this are split into chunks of whole rows, KV stores into up to 4 parts of whole
  // slots per side (tests set it small to exercise both on tiny models).
  uint64_t max_binding_bytes = 0;
  // false: never map device memory, use staging copies as on a discrete GPU.
  bool map_device_memory = true;
  // Time every dispatch with timestamp queries (where the device has them). Default: on for
  // GPUs; off on CPU devices, where the queries cost more than a small kernel (BENCHMARKS.md).
  std::optional<bool> timestamps;
  KernelStyle kernel_style = KernelStyle::kAuto;
  // kRowPerInvocation products (prefill and decode): matmul_lanes, which shares x between the
  // lanes of a subgroup, and decode attention with 8 lanes per (row, head), where the device's
  // subgroups allow (>= 8 lanes that can shuffle); false, or a device without them:
  // matmul_vec, prefill in passes of 8 tokens, one lane per (row, head) (the bench compares
  // the products).
  bool subgroup_matmul = true;
  // > 0: the most device memory (bytes) this backend reserves; beyond it allocations fail as
  // on a full device (tests provoke out-of-memory with it). 0: only the device's own limit.
  uint64_t device_memory_budget = 0;
};

// The device's measured roofs: streaming reads (GB/s: the better of a streaming kernel and the
// matrix-vector kernel on a 64 MiB matrix) and register-only multiply-adds (GFLOP/s), each the
// best of a few runs, timed with timestamps where the device has them.
struct DeviceRoofs {
  double memory_gb_per_s = 0.0;  // stored as "stream_gb_per_s" in the probe cache file
  double compute_gflop_per_s = 0.0;
};

// Steps of at most this many tokens use the matrix-vector kernel; more use the prefill kernel.
constexpr int64_t kMatrixVectorMaxTokens = 8;

// matmul_lanes' register tile (its specialization constants): weight rows x tokens per
// invocation, and invocations per workgroup.
struct LanesTile {
  uint32_t rows = 4;
  uint32_t tokens = 8;
  uint32_t group_size = 64;
};

class VulkanBackend final : public Backend {
 public:
  explicit VulkanBackend(const VulkanBackendOptions& options = {});
  ~VulkanBackend() override;
  std::string name() const override { return "vulkan"; }

  Tensor create_tensor(int64_t rows, int64_t cols, BufferPurpose purpose) override;
  WeightMatrix upload_matrix(gguf::GgmlType type, int64_t rows, int64_t cols,
                             std::span<const uint8_t> data) override;
  Tensor upload_vector(std::span<const float> values) override;
  void write(Tensor& dst, std::span<const float> values) override;
  std::vector<float> read(const Tensor& src) override;

  void embed(const WeightMatrix& table, std::span<const int32_t> ids, Tensor& out) override;
  void rms_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) override;
  void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                  Tensor& out) override;
  void matmul(const Tensor& x, const WeightMatrix& w, const Tensor* bias, Tensor& out) override;
  void rope(Tensor& x, int64_t head_dim, std::span<const int32_t> positions,
            const RopeSpec& rope) override;
  KvStore create_kv_store(gguf::GgmlType type, int64_t slots, int64_t kv_dim) override;
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
  // One dispatch for both (InputError if q and k share elements).
  void rope_qk(Tensor& q, Tensor& k, int64_t head_dim, std::span<const int32_t> positions,
               const RopeSpec& rope) override;
  void gather_rows(const Tensor& src, std::span<const int32_t> rows, Tensor& dst) override;
  void silu_mul(const Tensor& gate, const Tensor& up, Tensor& out) override;
  void gelu(Tensor& x) override;
  void gelu_mul(const Tensor& gate, const Tensor& up, Tensor& out) override;
  void scale(Tensor& x, float factor) override;
  void soft_cap(Tensor& x, float cap) override;
  void rms_norm_heads(Tensor& x, const Tensor& weight, int64_t head_dim, float eps) override;

  // Runs the probe kernels now (a fraction of a second); see device_probe.h for the cache.
  // Timestamps are on while it runs, then as `timestamps_after` (default: as configured).
  DeviceRoofs measure_roofs(bool timestamps_after);
  DeviceRoofs measure_roofs() { return measure_roofs(timestamps_by_default_); }

  // Per-dispatch timestamps from the next step on (e.g. to profile a few steps on a device
  // where they are off by default); last_step_timings().available says whether they ran.
  void set_timestamps(bool on) { recorder_->set_timestamps(on); }
  // Per-dispatch spans (kind, layer, start and end on the steady clock) from timestamp
  // queries, which are on while spans are, whatever set_timestamps says. false, with the reason
  // in why_no_kernel_spans(), where the device's compute queue has no timestamps.
  bool set_kernel_spans(bool on) override;
  std::string why_no_kernel_spans() const override;
  void set_span_layer(int64_t layer) override { recorder_->set_span_layer(layer); }
  std::vector<telemetry::KernelSpan> take_kernel_spans() override {
    return recorder_->take_spans();
  }
  // Submits anything recorded and waits (a no-op when nothing is pending).
  void finish();
  const DeviceDescription& device() const { return context_->description(); }
  const StepTimings& last_step_timings() const { return recorder_->last_step(); }
  // Pipelines compiled so far (each is compiled on first use unless prepared while loading).
  size_t pipelines_compiled() const { return pipelines_->size(); }
  // From the timestamps: zeros where they are off (CPU devices by default).
  telemetry::KernelTimes take_kernel_times() override;
  MemoryUsage memory_usage() const { return device_memory_->usage(); }
  const ValidationLog& validation_log() const { return context_->validation_log(); }
  std::vector<uint8_t> read_kv_bytes(const KvStore& store, bool values) override;

  // Test hook: the step submitted after `successful_steps` more reports VK_ERROR_DEVICE_LOST
  // (see CommandRecorder::simulate_device_lost_after).
  void simulate_device_lost_after(uint32_t successful_steps) {
    recorder_->simulate_device_lost_after(successful_steps);
  }
  // Test hook: behave as a device without timestamp queries on its compute queue.
  void simulate_no_timestamps() { recorder_->simulate_no_timestamps(); }

 private:
  void dispatch(const std::string& shader, std::initializer_list<BufferRange> bindings,
                const void* push, uint32_t push_bytes, WorkgroupCount groups, KernelClass kind,
                std::initializer_list<uint32_t> constants = {});
  void dispatch(const std::string& shader, std::span<const BufferRange> bindings, const void* push,
                uint32_t push_bytes, WorkgroupCount groups, KernelClass kind,
                std::span<const uint32_t> constants);
  // y == nullptr: the plain norm; else the residual add fused into it (x += y first).
  // groups > 1: each row of x is that many norms of x.cols / groups columns (rms_norm_heads).
  void record_rms_norm(const Tensor& x, const Tensor* y, const Tensor& weight, float eps,
                       Tensor& out, int64_t groups = 1);
  void record_layer_norm(const Tensor& x, const Tensor* y, const Tensor& weight, const Tensor& bias,
                         float eps, Tensor& out);
  // silu_mul or gelu_mul (same push constants, same bindings).
  void record_gated(const std::string& shader, const Tensor& gate, const Tensor& up, Tensor& out);
  // scale or soft_cap of x in place by `value`.
  void record_scale(const std::string& shader, Tensor& x, float value);
  // One dispatch ropes x0 and, when not null, x1 (workgroup z).
  void record_rope(const Tensor& x0, const Tensor* x1, int64_t head_dim,
                   std::span<const int32_t> positions, const RopeSpec& rope);
  // x itself if its offset and row stride are multiples of 4 (vec4 loads), else a copy that is.
  Tensor vec4_aligned(const Tensor& x);
  // Milliseconds of one dispatch run alone as a step (GPU time, or wall time without timestamps).
  double time_alone(const std::string& shader, std::initializer_list<BufferRange> bindings,
                    const void* push, uint32_t push_bytes, WorkgroupCount groups);
  // Compiles, while a model loads, the pipelines its steps will use with a weight matrix of
  // this type and row count, so that the first step does not pay for shader compilation
  // (tens of ms per pipeline on lavapipe).
  void prepare_pipelines(gguf::GgmlType weight_type, int64_t weight_rows);
  // The same for a KV store's type (store_kv and attention), when the store is created;
  // part_slots > 0: the _split kernels of a store in parts of that many slots.
  void prepare_kv_pipelines(gguf::GgmlType kv_type, uint32_t part_slots);
  void run_on_no_work(std::span<const Pipeline* const> pipelines);
  // Prefill products on CPU devices: matmul_lanes register tiles (see the shader).
  void record_lanes_matmul(const Tensor& x, const WeightMatrix& w, const Tensor* bias, Tensor& out,
                           const LanesTile& tile);
  void copy_into(const Allocation& dst, std::span<const uint8_t> bytes);
  // Waits for recorded work, then copies `regions` of src into dst (dstOffset: into dst).
  void read_regions(const Allocation& src, std::span<uint8_t> dst,
                    std::span<const VkBufferCopy> regions);
  // The AttentionBatch's three arrays back to back in one per-step upload, shared by the layers.
  BufferRange upload_batch(const AttentionBatch& batch);

  std::shared_ptr<VulkanContext> context_;
  std::shared_ptr<DeviceMemory> device_memory_;
  std::shared_ptr<DeviceMemory> host_memory_;
  std::unique_ptr<Pipelines> pipelines_;
  std::unique_ptr<CommandRecorder> recorder_;
  uint64_t max_binding_bytes_ = 0;
  bool workgroup_tiles_ = true;  // the resolved KernelStyle
  // CPU-style prefill with matmul_lanes: needs subgroups of >= 8 lanes that can shuffle.
  bool lanes_kernel_ = false;
  bool common_pipelines_ready_ = false;
  // KV types (and slots per part, 0 unsplit) whose kernels are prepared.
  std::vector<std::pair<gguf::GgmlType, uint32_t>> kv_pipelines_ready_;
  bool timestamps_by_default_ = true;
};

}  // namespace servescope::compute::vulkan
