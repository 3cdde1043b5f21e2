// Records one engine step into one command buffer and submits it once, when the host needs a
// result (Backend::read) or must touch memory the step uses. Between dependent dispatches it
// inserts a memory barrier; around every dispatch a timestamp query where the device has them.
// Descriptor sets and small per-step uploads (token ids, RoPE tables) live until the step's
// fence has signalled, then are recycled.
#pragma once

#include <vulkan/vulkan.h>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/compute/vulkan/device_memory.h"
#include "engine/compute/vulkan/pipelines.h"
#include "engine/compute/vulkan/step_timings.h"
#include "engine/compute/vulkan/vulkan_context.h"
#include "engine/telemetry/records.h"

namespace servescope::compute::vulkan {

// A storage-buffer binding: a byte range of a block's buffer.
struct BufferRange {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  VkDeviceSize size = 0;
};

inline BufferRange range_of(const Allocation& a) { return {a.buffer, a.offset, a.size}; }

struct WorkgroupCount {
  uint32_t x = 1, y = 1, z = 1;
};

class CommandRecorder {
 public:
  // timestamps = false records no queries even where the device has them.
  CommandRecorder(std::shared_ptr<VulkanContext> context, std::shared_ptr<DeviceMemory> host_memory,
                  bool timestamps = true);
  ~CommandRecorder();
  CommandRecorder(const CommandRecorder&) = delete;
  CommandRecorder& operator=(const CommandRecorder&) = delete;

  void dispatch(const Pipeline& pipeline, std::span<const BufferRange> bindings,
                const void* push_constants, uint32_t push_bytes, WorkgroupCount groups,
                KernelClass kind);
  // Copies bytes between buffers (staging transfers), ordered like a dispatch.
  void copy(const BufferRange& from, const BufferRange& to, std::span<const VkBufferCopy> regions);
  // Zeroes a range (new KV caches and weights start at zero, as on the CPU backend).
  void fill_zero(const BufferRange& range);
  // Copies `bytes` into host-visible memory that stays valid until this step completes.
  BufferRange upload(std::span<const uint8_t> bytes);
  // As upload, but bytes equal to an earlier upload_reused of this step share its range: the
  // attention batch and KV slots that every layer of a step reads go up once per step.
  BufferRange upload_reused(std::span<const uint8_t> bytes);

  bool has_pending_work() const { return recording_; }
  // Turns per-dispatch timestamps on or off from the next step (no-op without device support).
  void set_timestamps(bool on);
  bool device_has_timestamps() const { return timestamp_mask_ != 0; }
  // Per-dispatch spans on the steady clock: timestamps are on while spans are (whatever
  // set_timestamps said, which applies again when they go off). Turning them on or off drops
  // the spans not yet taken.
  void set_spans(bool on);
  // The layer the following dispatches belong to (-1 outside the layers).
  void set_span_layer(int64_t layer) { span_layer_ = layer; }
  // The spans of the steps submitted since the previous call, in the order they ran.
  std::vector<telemetry::KernelSpan> take_spans() { return std::exchange(spans_, {}); }
  // Submits what was recorded (if anything) and waits. BackendError on failure; the recorder
  // is then reset and usable for the next step, unless the device was lost: from then on
  // every call that would record or submit throws BackendError (nothing can run on a lost
  // device; the caller moves to the CPU backend).
  void submit_and_wait();
  // Drops what was recorded for this step without running it (a step that failed half-way).
  void discard();
  const StepTimings& last_step() const { return last_step_; }
  // Measured time per kernel class of every step since the previous call (zeros without
  // timestamps), then starts counting again.
  std::array<double, kKernelClassCount> take_class_milliseconds();

  bool device_lost() const { return device_lost_; }

  // Test hook: the submit after `successful_submits` more successful ones reports
  // VK_ERROR_DEVICE_LOST instead of running. The environment variable
  // SERVESCOPE_VULKAN_SIMULATE_DEVICE_LOST=N sets it when the recorder is made (CLI tests).
  void simulate_device_lost_after(uint32_t successful_submits);
  // Test hook: from now on behave as a device whose compute queue has no timestamps.
  void simulate_no_timestamps();

 private:
  void begin_if_needed();
  void throw_if_device_lost() const;
  VkResult submit_and_wait_for_fence();
  void barrier_before_next_command();
  void collect_timings();
  void append_spans(const std::vector<uint64_t>& stamps);
  void apply_timestamps();
  void recycle_step_resources();
  VkDescriptorSet allocate_set(VkDescriptorSetLayout layout);

  std::shared_ptr<VulkanContext> context_;
  std::shared_ptr<DeviceMemory> host_memory_;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  std::vector<VkDescriptorPool> descriptor_pools_;
  size_t current_pool_ = 0;
  VkQueryPool query_pool_ = VK_NULL_HANDLE;
  uint32_t query_capacity_ = 0;     // timestamps; two per dispatch
  bool timestamps_on_ = false;      // queries recorded from the next step on
  bool timestamps_wanted_ = false;  // as set_timestamps said
  bool spans_on_ = false;
  int64_t span_layer_ = -1;
  std::vector<telemetry::KernelSpan> spans_;
  // Host steady-clock milliseconds of the last submit and of its fence signalling: device
  // timestamps are placed on the host clock from the submit (see append_spans).
  double submitted_ms_ = 0.0;
  double completed_ms_ = 0.0;
  double timestamp_period_ns_ = 0.0;
  uint64_t timestamp_mask_ = 0;

  bool recording_ = false;
  uint32_t commands_recorded_ = 0;
  std::vector<KernelTiming> pending_kernels_;  // one per timed dispatch
  bool timings_overflowed_ = false;
  std::vector<Allocation> uploads_;
  VkDeviceSize upload_used_ = 0;  // bytes used of uploads_.back()
  struct ReusedUpload {
    std::vector<uint8_t> bytes;
    BufferRange range;
  };
  std::vector<ReusedUpload> reused_uploads_;  // this step's, checked newest first
  StepTimings last_step_;
  std::array<double, kKernelClassCount> class_milliseconds_since_taken_{};
  bool device_lost_ = false;
  std::optional<uint32_t> submits_until_simulated_loss_;
};

}  // namespace servescope::compute::vulkan
