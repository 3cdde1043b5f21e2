// ServeScope's own allocator over a few large VkDeviceMemory blocks. Each block is one
// VkBuffer bound to one allocation; tensors are sub-ranges of a block (offset aligned to
// minStorageBufferOffsetAlignment) found first-fit in a free list that merges neighbours.
// Bytes in use are accounted per BufferPurpose, for the memory panel.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "engine/compute/backend.h"
#include "engine/compute/vulkan/vulkan_context.h"

namespace servescope::compute::vulkan {

// A sub-range of a block's buffer.
struct Allocation {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  VkDeviceSize size = 0;
  uint8_t* mapped = nullptr;  // host pointer to `offset`, or null when not host-visible
  uint32_t block = 0;
  BufferPurpose purpose = BufferPurpose::kScratch;
};

struct MemoryUsage {
  std::array<uint64_t, 4> bytes_in_use{};  // indexed by BufferPurpose
  uint64_t bytes_reserved = 0;             // all blocks together
  uint32_t blocks = 0;
};

enum class MemoryKind {
  kDevice,  // device-local; mapped only if also host-visible (unified memory, lavapipe)
  kHost,    // host-visible and coherent: staging and per-step uploads
};

constexpr VkDeviceSize kDefaultBlockBytes = VkDeviceSize{64} << 20;

class DeviceMemory {
 public:
  // map_device_memory = false treats device memory as never host-visible (tests the staging
  // path of discrete GPUs on a unified-memory device). budget > 0 caps the bytes this pool
  // reserves from the device: a block beyond it fails as the device's own out-of-memory
  // would (tests use it to provoke out-of-memory on any device).
  DeviceMemory(std::shared_ptr<VulkanContext> context, MemoryKind kind,
               bool map_device_memory = true, VkDeviceSize block_size = kDefaultBlockBytes,
               VkDeviceSize budget = 0);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  // BackendError if the device (or the budget) cannot provide the memory; nothing is
  // allocated then, and the pool stays usable.
  Allocation allocate(VkDeviceSize size, BufferPurpose purpose);
  void release(const Allocation& allocation);
  MemoryUsage usage() const { return usage_; }
  bool host_visible() const { return host_visible_; }

 private:
  struct Block {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkDeviceSize size = 0;
    uint8_t* mapped = nullptr;
    std::map<VkDeviceSize, VkDeviceSize> free_ranges;  // offset -> size
  };
  void add_block(VkDeviceSize size);
  VkResult allocate_memory(const VkMemoryAllocateInfo& info, VkDeviceMemory& memory) const;
  bool take_from(uint32_t block_index, VkDeviceSize size, Allocation& out);

  std::shared_ptr<VulkanContext> context_;
  MemoryKind kind_;
  bool map_;
  bool host_visible_ = false;
  VkDeviceSize block_size_;
  VkDeviceSize budget_;
  VkDeviceSize alignment_;
  std::vector<Block> blocks_;
  MemoryUsage usage_;
};

// An allocation that returns itself to its DeviceMemory when destroyed. Holds the memory
// (and through it the device) alive, so buffers may outlive the backend object.
class OwnedAllocation {
 public:
  OwnedAllocation(std::shared_ptr<DeviceMemory> memory, Allocation allocation)
      : memory_(std::move(memory)), allocation_(allocation) {}
  ~OwnedAllocation() { memory_->release(allocation_); }
  OwnedAllocation(const OwnedAllocation&) = delete;
  OwnedAllocation& operator=(const OwnedAllocation&) = delete;
  const Allocation& get() const { return allocation_; }

 private:
  std::shared_ptr<DeviceMemory> memory_;
  Allocation allocation_;
};

}  // namespace servescope::compute::vulkan
