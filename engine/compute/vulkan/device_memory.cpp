#include "engine/compute/vulkan/device_memory.h"

#include <algorithm>
#include <optional>

#include "engine/compute/vulkan/vulkan_check.h"
#include "engine/compute/vulkan/vulkan_functions.h"
#include "engine/core/error.h"

namespace servescope::compute::vulkan {
namespace {

VkDeviceSize align_up(VkDeviceSize value, VkDeviceSize alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

std::optional<uint32_t> find_memory_type(const VkPhysicalDeviceMemoryProperties& properties,
                                         uint32_t allowed, VkMemoryPropertyFlags wanted) {
  for (uint32_t i = 0; i < properties.memoryTypeCount; ++i) {
    if ((allowed & (1u << i)) && (properties.memoryTypes[i].propertyFlags & wanted) == wanted) {
      return i;
    }
  }
  return std::nullopt;
}

}  // namespace

DeviceMemory::DeviceMemory(std::shared_ptr<VulkanContext> context, MemoryKind kind,
                           bool map_device_memory, VkDeviceSize block_size, VkDeviceSize budget)
    : context_(std::move(context)),
      kind_(kind),
      map_(map_device_memory),
      block_size_(block_size),
      budget_(budget) {
  const VkPhysicalDeviceLimits& limits = context_->properties().limits;
  // 16 bytes at least: shaders read weights as 32-bit words and tensors as vec4 at best.
  alignment_ = std::max<VkDeviceSize>(16, limits.minStorageBufferOffsetAlignment);
  block_size_ = std::min<VkDeviceSize>(block_size_, limits.maxStorageBufferRange);
}

DeviceMemory::~DeviceMemory() {
  VkDevice device = context_->device();
  vkDeviceWaitIdle(device);
  for (Block& block : blocks_) {
    vkDestroyBuffer(device, block.buffer, nullptr);
    vkFreeMemory(device, block.memory, nullptr);  // unmaps implicitly
  }
}

void DeviceMemory::add_block(VkDeviceSize size) {
  VkDevice device = context_->device();
  Block block;
  block.size = size;
  VkBufferCreateInfo buffer_info{};
  buffer_info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  buffer_info.size = size;
  buffer_info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                      VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  buffer_info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vkCreateBuffer(device, &buffer_info, nullptr, &block.buffer), "creating a buffer");

  VkMemoryRequirements requirements;
  vkGetBufferMemoryRequirements(device, block.buffer, &requirements);
  const auto& properties = context_->memory_properties();
  std::optional<uint32_t> type;
  if (kind_ == MemoryKind::kDevice) {
    type = find_memory_type(properties, requirements.memoryTypeBits,
                            VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (!type) type = find_memory_type(properties, requirements.memoryTypeBits, 0);
  } else {
    type = find_memory_type(properties, requirements.memoryTypeBits,
                            VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                                VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    if (!type) {
      type = find_memory_type(
          properties, requirements.memoryTypeBits,
          VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    }
  }
  if (!type) {
    vkDestroyBuffer(device, block.buffer, nullptr);
    throw BackendError("Vulkan: the device offers no suitable memory type for buffers");
  }
  VkMemoryAllocateInfo allocate_info{};
  allocate_info.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  allocate_info.allocationSize = requirements.size;
  allocate_info.memoryTypeIndex = *type;
  const std::string what =
      std::string("allocating ") + std::to_string((size + (1 << 20) - 1) >> 20) + " MiB of " +
      (kind_ == MemoryKind::kDevice ? "device" : "host-visible") + " memory (" +
      std::to_string(usage_.bytes_reserved >> 20) + " MiB already held)";
  const VkResult result = allocate_memory(allocate_info, block.memory);
  if (result != VK_SUCCESS) {
    vkDestroyBuffer(device, block.buffer, nullptr);
    check(result, what);
  }
  try {
    check(vkBindBufferMemory(device, block.buffer, block.memory, 0), "binding memory");
    const VkMemoryPropertyFlags flags = properties.memoryTypes[*type].propertyFlags;
    const bool visible = (flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) &&
                         (flags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    if (visible && (kind_ == MemoryKind::kHost || map_)) {
      void* pointer = nullptr;
      check(vkMapMemory(device, block.memory, 0, VK_WHOLE_SIZE, 0, &pointer), "mapping memory");
      block.mapped = static_cast<uint8_t*>(pointer);
    }
  } catch (...) {
    vkDestroyBuffer(device, block.buffer, nullptr);
    vkFreeMemory(device, block.memory, nullptr);
    throw;
  }
  // All blocks of a pool are alike; the first one decides whether the pool is mapped.
  if (blocks_.empty()) host_visible_ = block.mapped != nullptr;
  block.free_ranges[0] = size;
  blocks_.push_back(std::move(block));
  usage_.bytes_reserved += size;
  usage_.blocks += 1;
}

VkResult DeviceMemory::allocate_memory(const VkMemoryAllocateInfo& info,
                                       VkDeviceMemory& memory) const {
  if (budget_ > 0 && usage_.bytes_reserved + info.allocationSize > budget_) {
    return VK_ERROR_OUT_OF_DEVICE_MEMORY;  // as the device would answer at its limit
  }
  return vkAllocateMemory(context_->device(), &info, nullptr, &memory);
}

bool DeviceMemory::take_from(uint32_t block_index, VkDeviceSize size, Allocation& out) {
  Block& block = blocks_[block_index];
  for (auto it = block.free_ranges.begin(); it != block.free_ranges.end(); ++it) {
    if (it->second < size) continue;
    const VkDeviceSize offset = it->first;
    const VkDeviceSize remaining = it->second - size;
    block.free_ranges.erase(it);
    if (remaining > 0) block.free_ranges[offset + size] = remaining;
    out.buffer = block.buffer;
    out.offset = offset;
    out.size = size;
    out.mapped = block.mapped ? block.mapped + offset : nullptr;
    out.block = block_index;
    return true;
  }
  return false;
}

Allocation DeviceMemory::allocate(VkDeviceSize size, BufferPurpose purpose) {
  const VkDeviceSize limit = context_->properties().limits.maxStorageBufferRange;
  if (size > limit) {
    throw BackendError("Vulkan: a buffer of " + std::to_string(size) +
                       " bytes exceeds the device's largest storage binding (" +
                       std::to_string(limit) +
                       " bytes; run fewer tokens per step, or use --backend cpu)");
  }
  // Every range is a multiple of the alignment, so every offset stays aligned.
  const VkDeviceSize rounded = align_up(std::max<VkDeviceSize>(size, 1), alignment_);
  Allocation result;
  result.purpose = purpose;
  bool found = false;
  for (uint32_t i = 0; i < blocks_.size() && !found; ++i) found = take_from(i, rounded, result);
  if (!found) {
    add_block(std::max(block_size_, rounded));
    found = take_from(static_cast<uint32_t>(blocks_.size() - 1), rounded, result);
  }
  usage_.bytes_in_use[static_cast<size_t>(purpose)] += rounded;
  return result;
}

void DeviceMemory::release(const Allocation& allocation) {
  Block& block = blocks_[allocation.block];
  VkDeviceSize offset = allocation.offset;
  VkDeviceSize size = allocation.size;
  usage_.bytes_in_use[static_cast<size_t>(allocation.purpose)] -= size;
  auto next = block.free_ranges.lower_bound(offset);
  if (next != block.free_ranges.end() && offset + size == next->first) {
    size += next->second;
    next = block.free_ranges.erase(next);
  }
  if (next != block.free_ranges.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == offset) {
      offset = previous->first;
      size += previous->second;
      block.free_ranges.erase(previous);
    }
  }
  block.free_ranges[offset] = size;
}

}  // namespace servescope::compute::vulkan
