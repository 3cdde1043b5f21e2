#include "engine/compute/vulkan/command_recorder.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "engine/compute/vulkan/vulkan_check.h"
#include "engine/compute/vulkan/vulkan_functions.h"
#include "engine/core/error.h"

namespace servescope::compute::vulkan {
namespace {

constexpr uint32_t kSetsPerDescriptorPool = 1024;
constexpr uint32_t kBuffersPerSet = 8;
constexpr VkDeviceSize kUploadChunkBytes = VkDeviceSize{256} << 10;
constexpr uint32_t kInitialTimestamps = 2048;
constexpr uint64_t kFenceTimeoutNs = uint64_t{120} * 1000 * 1000 * 1000;

constexpr VkPipelineStageFlags kWorkStages =
    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
constexpr VkAccessFlags kWriteAccess = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
constexpr VkAccessFlags kAnyAccess = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                     VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;

double steady_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

telemetry::KernelKind telemetry_kind(KernelClass kind) {
  switch (kind) {
    case KernelClass::kMatmul:
      return telemetry::KernelKind::kMatmul;
    case KernelClass::kAttention:
      return telemetry::KernelKind::kAttention;
    case KernelClass::kNorm:
      return telemetry::KernelKind::kNorm;
    case KernelClass::kOther:
      break;
  }
  return telemetry::KernelKind::kOther;
}

const char* kernel_class_name(KernelClass kind) {
  switch (kind) {
    case KernelClass::kMatmul:
      return "matmul";
    case KernelClass::kAttention:
      return "attention";
    case KernelClass::kNorm:
      return "norm";
    case KernelClass::kOther:
      return "other";
  }
  return "other";
}

CommandRecorder::CommandRecorder(std::shared_ptr<VulkanContext> context,
                                 std::shared_ptr<DeviceMemory> host_memory, bool timestamps)
    : context_(std::move(context)), host_memory_(std::move(host_memory)) {
  VkDevice device = context_->device();
  VkCommandPoolCreateInfo pool_info{};
  pool_info.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pool_info.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
  pool_info.queueFamilyIndex = context_->queue_family();
  check(vkCreateCommandPool(device, &pool_info, nullptr, &command_pool_),
        "creating a command pool");

  VkCommandBufferAllocateInfo buffer_info{};
  buffer_info.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  buffer_info.commandPool = command_pool_;
  buffer_info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  buffer_info.commandBufferCount = 1;
  check(vkAllocateCommandBuffers(device, &buffer_info, &commands_), "allocating a command buffer");

  VkFenceCreateInfo fence_info{};
  fence_info.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  check(vkCreateFence(device, &fence_info, nullptr, &fence_), "creating a fence");

  const uint32_t valid_bits = context_->timestamp_valid_bits();
  if (valid_bits > 0) {
    timestamp_mask_ = valid_bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << valid_bits) - 1;
    timestamp_period_ns_ = context_->properties().limits.timestampPeriod;
  }
  set_timestamps(timestamps);
  if (const char* after = std::getenv("SERVESCOPE_VULKAN_SIMULATE_DEVICE_LOST")) {
    simulate_device_lost_after(static_cast<uint32_t>(std::strtoul(after, nullptr, 10)));
  }
}

void CommandRecorder::simulate_device_lost_after(uint32_t successful_submits) {
  submits_until_simulated_loss_ = successful_submits;
}

void CommandRecorder::simulate_no_timestamps() {
  if (recording_) submit_and_wait();
  timestamp_mask_ = 0;
  apply_timestamps();
}

void CommandRecorder::throw_if_device_lost() const {
  if (device_lost_) {
    throw BackendError(
        "Vulkan: the device was lost in an earlier step (VK_ERROR_DEVICE_LOST); nothing more "
        "can run on it: restart with --backend cpu");
  }
}

void CommandRecorder::set_timestamps(bool on) {
  timestamps_wanted_ = on;
  apply_timestamps();
}

void CommandRecorder::set_spans(bool on) {
  spans_on_ = on;
  spans_.clear();
  apply_timestamps();
}

void CommandRecorder::apply_timestamps() {
  const bool on = (timestamps_wanted_ || spans_on_) && timestamp_mask_ != 0;
  if (on == timestamps_on_) return;
  if (recording_) submit_and_wait();
  timestamps_on_ = on;
  if (timestamps_on_) {
    query_capacity_ = std::max(query_capacity_, kInitialTimestamps);
  } else if (query_pool_ != VK_NULL_HANDLE) {
    vkDestroyQueryPool(context_->device(), query_pool_, nullptr);
    query_pool_ = VK_NULL_HANDLE;
  }
}

CommandRecorder::~CommandRecorder() {
  VkDevice device = context_->device();
  vkDeviceWaitIdle(device);
  for (const Allocation& a : uploads_) host_memory_->release(a);
  for (VkDescriptorPool pool : descriptor_pools_) vkDestroyDescriptorPool(device, pool, nullptr);
  if (query_pool_ != VK_NULL_HANDLE) vkDestroyQueryPool(device, query_pool_, nullptr);
  vkDestroyFence(device, fence_, nullptr);
  vkDestroyCommandPool(device, command_pool_, nullptr);
}

void CommandRecorder::begin_if_needed() {
  throw_if_device_lost();
  if (recording_) return;
  VkDevice device = context_->device();
  if (timestamps_on_ && query_pool_ == VK_NULL_HANDLE) {
    VkQueryPoolCreateInfo query_info{};
    query_info.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    query_info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    query_info.queryCount = query_capacity_;
    check(vkCreateQueryPool(device, &query_info, nullptr, &query_pool_), "creating a query pool");
  }
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(commands_, &begin), "beginning a command buffer");
  if (query_pool_ != VK_NULL_HANDLE)
    vkCmdResetQueryPool(commands_, query_pool_, 0, query_capacity_);
  recording_ = true;
  commands_recorded_ = 0;
  timings_overflowed_ = false;
  pending_kernels_.clear();
}

// A global memory barrier orders every dispatch after the one before. Simple and always
// correct (a later kernel may read, or reuse the memory of, anything written before it); on
// lavapipe, which runs dispatches one after another anyway, it costs next to nothing.
void CommandRecorder::barrier_before_next_command() {
  if (commands_recorded_ == 0) return;
  VkMemoryBarrier barrier{};
  barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  barrier.srcAccessMask = kWriteAccess;
  barrier.dstAccessMask = kAnyAccess;
  vkCmdPipelineBarrier(commands_, kWorkStages, kWorkStages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

VkDescriptorSet CommandRecorder::allocate_set(VkDescriptorSetLayout layout) {
  VkDevice device = context_->device();
  for (;; ++current_pool_) {
    if (current_pool_ == descriptor_pools_.size()) {
      VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                kSetsPerDescriptorPool * kBuffersPerSet};
      VkDescriptorPoolCreateInfo info{};
      info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
      info.maxSets = kSetsPerDescriptorPool;
      info.poolSizeCount = 1;
      info.pPoolSizes = &size;
      VkDescriptorPool pool = VK_NULL_HANDLE;
      check(vkCreateDescriptorPool(device, &info, nullptr, &pool), "creating a descriptor pool");
      descriptor_pools_.push_back(pool);
    }
    VkDescriptorSetAllocateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    info.descriptorPool = descriptor_pools_[current_pool_];
    info.descriptorSetCount = 1;
    info.pSetLayouts = &layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    const VkResult result = vkAllocateDescriptorSets(device, &info, &set);
    if (result == VK_SUCCESS) return set;
    if (result != VK_ERROR_OUT_OF_POOL_MEMORY && result != VK_ERROR_FRAGMENTED_POOL) {
      check(result, "allocating a descriptor set");
    }
  }
}

void CommandRecorder::dispatch(const Pipeline& pipeline, std::span<const BufferRange> bindings,
                               const void* push_constants, uint32_t push_bytes,
                               WorkgroupCount groups, KernelClass kind) {
  if (bindings.size() != pipeline.binding_count || push_bytes > kPushConstantBytes) {
    throw BackendError("Vulkan: internal error: wrong bindings for shader " + pipeline.name);
  }
  const auto& limits = context_->properties().limits;
  if (groups.x > limits.maxComputeWorkGroupCount[0] ||
      groups.y > limits.maxComputeWorkGroupCount[1] ||
      groups.z > limits.maxComputeWorkGroupCount[2]) {
    throw BackendError("Vulkan: " + pipeline.name +
                       " needs more workgroups than the device allows");
  }
  if (groups.x == 0 || groups.y == 0 || groups.z == 0) return;  // nothing to do
  begin_if_needed();
  VkDescriptorSet set = allocate_set(pipeline.set_layout);
  std::vector<VkDescriptorBufferInfo> infos(bindings.size());
  std::vector<VkWriteDescriptorSet> writes(bindings.size());
  for (size_t i = 0; i < bindings.size(); ++i) {
    infos[i] = {bindings[i].buffer, bindings[i].offset, bindings[i].size};
    writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[i].dstSet = set;
    writes[i].dstBinding = static_cast<uint32_t>(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  vkUpdateDescriptorSets(context_->device(), static_cast<uint32_t>(writes.size()), writes.data(), 0,
                         nullptr);

  barrier_before_next_command();
  vkCmdBindPipeline(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.pipeline);
  vkCmdBindDescriptorSets(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout, 0, 1, &set, 0,
                          nullptr);
  vkCmdPushConstants(commands_, pipeline.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes,
                     push_constants);
  const auto query = static_cast<uint32_t>(2 * pending_kernels_.size());
  const bool timed = query_pool_ != VK_NULL_HANDLE && query + 2 <= query_capacity_;
  if (query_pool_ != VK_NULL_HANDLE && !timed) timings_overflowed_ = true;
  if (timed) {
    vkCmdWriteTimestamp(commands_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, query_pool_, query);
  }
  vkCmdDispatch(commands_, groups.x, groups.y, groups.z);
  if (timed) {
    vkCmdWriteTimestamp(commands_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, query_pool_, query + 1);
    pending_kernels_.push_back({pipeline.name, kind, 0.0, span_layer_});
  }
  ++commands_recorded_;
}

void CommandRecorder::copy(const BufferRange& from, const BufferRange& to,
                           std::span<const VkBufferCopy> regions) {
  if (regions.empty()) return;
  begin_if_needed();
  barrier_before_next_command();
  std::vector<VkBufferCopy> absolute(regions.begin(), regions.end());
  for (VkBufferCopy& r : absolute) {
    r.srcOffset += from.offset;
    r.dstOffset += to.offset;
  }
  vkCmdCopyBuffer(commands_, from.buffer, to.buffer, static_cast<uint32_t>(absolute.size()),
                  absolute.data());
  ++commands_recorded_;
}

void CommandRecorder::fill_zero(const BufferRange& range) {
  begin_if_needed();
  barrier_before_next_command();
  vkCmdFillBuffer(commands_, range.buffer, range.offset, range.size, 0);
  ++commands_recorded_;
}

BufferRange CommandRecorder::upload(std::span<const uint8_t> bytes) {
  throw_if_device_lost();
  const VkDeviceSize alignment =
      std::max<VkDeviceSize>(16, context_->properties().limits.minStorageBufferOffsetAlignment);
  const VkDeviceSize size = std::max<VkDeviceSize>(16, (bytes.size() + 15) / 16 * 16);
  VkDeviceSize at = (upload_used_ + alignment - 1) / alignment * alignment;
  if (uploads_.empty() || at + size > uploads_.back().size) {
    uploads_.push_back(
        host_memory_->allocate(std::max(kUploadChunkBytes, size), BufferPurpose::kScratch));
    at = 0;
  }
  const Allocation& chunk = uploads_.back();
  std::memcpy(chunk.mapped + at, bytes.data(), bytes.size());
  upload_used_ = at + size;
  return {chunk.buffer, chunk.offset + at, size};
}

BufferRange CommandRecorder::upload_reused(std::span<const uint8_t> bytes) {
  for (auto it = reused_uploads_.rbegin(); it != reused_uploads_.rend(); ++it) {
    if (std::equal(bytes.begin(), bytes.end(), it->bytes.begin(), it->bytes.end())) {
      return it->range;
    }
  }
  const BufferRange range = upload(bytes);
  reused_uploads_.push_back({std::vector<uint8_t>(bytes.begin(), bytes.end()), range});
  return range;
}

void CommandRecorder::submit_and_wait() {
  throw_if_device_lost();  // results in memory are not to be trusted either
  if (!recording_) {
    recycle_step_resources();
    return;
  }
  // Make the step's writes visible to the host (reads of mapped memory after the fence).
  VkMemoryBarrier to_host{};
  to_host.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  to_host.srcAccessMask = kWriteAccess;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(commands_, kWorkStages, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0,
                       nullptr, 0, nullptr);
  recording_ = false;
  VkDevice device = context_->device();
  try {
    check(vkEndCommandBuffer(commands_), "ending a command buffer");
    const VkResult result = submit_and_wait_for_fence();
    if (result == VK_TIMEOUT) {
      throw BackendError("Vulkan: a step did not finish within 120 s; use --backend cpu");
    }
    if (result == VK_ERROR_DEVICE_LOST) device_lost_ = true;
    check(result, "running a step");
    check(vkResetFences(device, 1, &fence_), "resetting a fence");
  } catch (...) {
    // Leave nothing in flight and nothing held; on a lost device these calls may fail too,
    // which changes nothing.
    vkDeviceWaitIdle(device);
    vkResetFences(device, 1, &fence_);
    recycle_step_resources();
    throw;
  }
  collect_timings();
  recycle_step_resources();
}

void CommandRecorder::discard() {
  if (!recording_) return;
  recording_ = false;
  recycle_step_resources();  // resets the command buffer from recording to initial
}

// Submit and fence wait as one result: the first that fails, or the wait's.
VkResult CommandRecorder::submit_and_wait_for_fence() {
  if (submits_until_simulated_loss_) {
    if (*submits_until_simulated_loss_ == 0) {
      submits_until_simulated_loss_.reset();
      return VK_ERROR_DEVICE_LOST;  // simulated: the step never reaches the queue
    }
    --*submits_until_simulated_loss_;
  }
  VkSubmitInfo submit{};
  submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &commands_;
  submitted_ms_ = steady_ms();
  const VkResult submitted = vkQueueSubmit(context_->queue(), 1, &submit, fence_);
  if (submitted != VK_SUCCESS) return submitted;
  const VkResult waited = vkWaitForFences(context_->device(), 1, &fence_, VK_TRUE, kFenceTimeoutNs);
  completed_ms_ = steady_ms();
  return waited;
}

void CommandRecorder::collect_timings() {
  StepTimings step;
  step.dispatches = commands_recorded_;
  step.submits = 1;
  const auto count = static_cast<uint32_t>(2 * pending_kernels_.size());
  if (count > 0 && !timings_overflowed_) {
    std::vector<uint64_t> stamps(count);
    const VkResult result = vkGetQueryPoolResults(context_->device(), query_pool_, 0, count,
                                                  stamps.size() * sizeof(uint64_t), stamps.data(),
                                                  sizeof(uint64_t), VK_QUERY_RESULT_64_BIT);
    if (result == VK_SUCCESS) {
      step.available = true;
      for (size_t i = 0; i < pending_kernels_.size(); ++i) {
        const uint64_t ticks = (stamps[2 * i + 1] - stamps[2 * i]) & timestamp_mask_;
        KernelTiming timing = pending_kernels_[i];
        timing.milliseconds = static_cast<double>(ticks) * timestamp_period_ns_ * 1e-6;
        step.class_milliseconds[static_cast<size_t>(timing.kind)] += timing.milliseconds;
        step.kernels.push_back(std::move(timing));
      }
      const uint64_t span = (stamps[count - 1] - stamps[0]) & timestamp_mask_;
      step.gpu_milliseconds = static_cast<double>(span) * timestamp_period_ns_ * 1e-6;
      if (spans_on_) append_spans(stamps);
    }
  }
  if (timings_overflowed_ && query_pool_ != VK_NULL_HANDLE) {
    // Too many dispatches for the pool: grow it for the next step.
    vkDestroyQueryPool(context_->device(), query_pool_, nullptr);
    query_pool_ = VK_NULL_HANDLE;
    query_capacity_ *= 2;
  }
  for (size_t k = 0; k < kKernelClassCount; ++k) {
    class_milliseconds_since_taken_[k] += step.class_milliseconds[k];
  }
  last_step_ = std::move(step);
}

// The device's timestamps count on its own clock, so they are placed on the host's: the first
// dispatch starts at the submit (it cannot start earlier; on lavapipe the queue starts at
// once), later ones at their measured distance from it. An end past the fence's signal (clock
// drift) is cut there: the work was done by then.
void CommandRecorder::append_spans(const std::vector<uint64_t>& stamps) {
  const double ms_per_tick = timestamp_period_ns_ * 1e-6;
  const auto host_ms = [&](uint64_t stamp) {
    const uint64_t ticks = (stamp - stamps[0]) & timestamp_mask_;
    return std::min(completed_ms_, submitted_ms_ + static_cast<double>(ticks) * ms_per_tick);
  };
  for (size_t i = 0; i < pending_kernels_.size(); ++i) {
    const KernelTiming& k = pending_kernels_[i];
    spans_.push_back(
        {telemetry_kind(k.kind), k.layer, host_ms(stamps[2 * i]), host_ms(stamps[2 * i + 1])});
  }
}

std::array<double, kKernelClassCount> CommandRecorder::take_class_milliseconds() {
  return std::exchange(class_milliseconds_since_taken_, {});
}

void CommandRecorder::recycle_step_resources() {
  VkDevice device = context_->device();
  vkResetCommandPool(device, command_pool_, 0);
  for (VkDescriptorPool pool : descriptor_pools_) vkResetDescriptorPool(device, pool, 0);
  current_pool_ = 0;
  for (const Allocation& a : uploads_) host_memory_->release(a);
  uploads_.clear();
  upload_used_ = 0;
  reused_uploads_.clear();
  pending_kernels_.clear();
  commands_recorded_ = 0;
}

}  // namespace servescope::compute::vulkan
