// A headless Vulkan compute context: instance (with the validation layer when asked), the
// chosen physical device, a logical device and one compute queue. No window, no surface.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace servescope::compute::vulkan {

// What the user sees when choosing a device (`--device N` indexes this list).
struct DeviceDescription {
  uint32_t index = 0;
  std::string name;
  std::string type;  // "discrete", "integrated", "virtual", "cpu", "other"
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  uint32_t driver_version = 0;
  uint32_t api_version = 0;
  std::array<uint8_t, VK_UUID_SIZE> uuid{};
  bool has_compute_queue = false;
  // The driver's own name and version text (VK_KHR_driver_properties, e.g. "llvmpipe" and
  // "Mesa 22.3.6"); empty where the device does not report them.
  std::string driver_name;
  std::string driver_info;
  struct MemoryHeap {
    uint64_t bytes = 0;
    bool device_local = false;
  };
  std::vector<MemoryHeap> memory_heaps;
  uint32_t subgroup_size = 0;
  uint64_t max_storage_buffer_range = 0;         // bytes one storage binding may span
  std::array<uint32_t, 3> max_workgroup_size{};  // per dimension
  uint32_t max_workgroup_invocations = 0;
  uint32_t max_push_constants_size = 0;
};

struct ContextOptions {
  std::optional<uint32_t> device_index;  // default: the best device (see choose_device)
  // Enable VK_LAYER_KHRONOS_validation and record its messages. Default: the environment
  // variable SERVESCOPE_VULKAN_VALIDATION=1.
  std::optional<bool> validation;
};

// Messages from the validation layer (warnings and errors), kept for tests and diagnostics.
class ValidationLog {
 public:
  void add(const std::string& message);
  size_t count() const;
  std::vector<std::string> messages() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> messages_;
};

// Devices the loader reports. Throws BackendError when there is no loader or no device.
std::vector<DeviceDescription> list_devices();

// Discrete first, then integrated, virtual, CPU (lavapipe); ties by index. Only devices with
// a compute queue qualify. Returns the index into `devices`.
uint32_t choose_device(const std::vector<DeviceDescription>& devices);

class VulkanContext {
 public:
  explicit VulkanContext(const ContextOptions& options);
  ~VulkanContext();
  VulkanContext(const VulkanContext&) = delete;
  VulkanContext& operator=(const VulkanContext&) = delete;

  VkDevice device() const { return device_; }
  VkPhysicalDevice physical_device() const { return physical_device_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return queue_family_; }
  const VkPhysicalDeviceProperties& properties() const { return properties_; }
  const VkPhysicalDeviceMemoryProperties& memory_properties() const { return memory_properties_; }
  const DeviceDescription& description() const { return description_; }
  // Bits of a timestamp that are meaningful on the compute queue (0: no timestamps).
  uint32_t timestamp_valid_bits() const { return timestamp_valid_bits_; }
  bool validation_enabled() const { return validation_enabled_; }
  const ValidationLog& validation_log() const { return validation_log_; }

 private:
  void create_instance(bool validation);
  void create_device();

  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_device_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  uint32_t timestamp_valid_bits_ = 0;
  bool validation_enabled_ = false;
  VkPhysicalDeviceProperties properties_{};
  VkPhysicalDeviceMemoryProperties memory_properties_{};
  DeviceDescription description_;
  ValidationLog validation_log_;
};

}  // namespace servescope::compute::vulkan
