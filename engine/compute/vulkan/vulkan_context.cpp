#include "engine/compute/vulkan/vulkan_context.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "engine/compute/vulkan/driver_residency.h"
#include "engine/compute/vulkan/vulkan_check.h"
#include "engine/compute/vulkan/vulkan_functions.h"
#include "engine/core/error.h"

namespace servescope::compute::vulkan {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

bool validation_requested_by_environment() {
  const char* value = std::getenv("SERVESCOPE_VULKAN_VALIDATION");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

bool layer_available(const char* name) {
  uint32_t count = 0;
  if (vkEnumerateInstanceLayerProperties(&count, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(count);
  if (vkEnumerateInstanceLayerProperties(&count, layers.data()) != VK_SUCCESS) return false;
  return std::any_of(layers.begin(), layers.end(), [&](const VkLayerProperties& l) {
    return std::strcmp(l.layerName, name) == 0;
  });
}

bool instance_extension_available(const char* name) {
  uint32_t count = 0;
  if (vkEnumerateInstanceExtensionProperties(nullptr, &count, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> extensions(count);
  if (vkEnumerateInstanceExtensionProperties(nullptr, &count, extensions.data()) != VK_SUCCESS) {
    return false;
  }
  return std::any_of(extensions.begin(), extensions.end(), [&](const VkExtensionProperties& e) {
    return std::strcmp(e.extensionName, name) == 0;
  });
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT /*types*/,
    const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  const char* level =
      severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning";
  static_cast<ValidationLog*>(user)->add(std::string("validation ") + level + ": " +
                                         (data->pMessage ? data->pMessage : "(no message)"));
  return VK_FALSE;
}

VkDebugUtilsMessengerCreateInfoEXT messenger_info(ValidationLog* log) {
  VkDebugUtilsMessengerCreateInfoEXT info{};
  info.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
  info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  info.pfnUserCallback = on_validation_message;
  info.pUserData = log;
  return info;
}

const char* type_name(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "cpu";
    default:
      return "other";
  }
}

int preference_rank(const std::string& type) {
  if (type == "discrete") return 0;
  if (type == "integrated") return 1;
  if (type == "virtual") return 2;
  if (type == "cpu") return 3;
  return 4;
}

std::optional<uint32_t> compute_queue_family(VkPhysicalDevice device) {
  uint32_t count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(device, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  vkGetPhysicalDeviceQueueFamilyProperties(device, &count, families.data());
  // A compute-only family (an async compute queue) first, else any family with compute.
  for (uint32_t i = 0; i < count; ++i) {
    if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) &&
        !(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) {
      return i;
    }
  }
  for (uint32_t i = 0; i < count; ++i) {
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) return i;
  }
  return std::nullopt;
}

bool device_extension_available(VkPhysicalDevice device, const char* name) {
  uint32_t count = 0;
  if (vkEnumerateDeviceExtensionProperties(device, nullptr, &count, nullptr) != VK_SUCCESS) {
    return false;
  }
  std::vector<VkExtensionProperties> extensions(count);
  if (vkEnumerateDeviceExtensionProperties(device, nullptr, &count, extensions.data()) !=
      VK_SUCCESS) {
    return false;
  }
  return std::any_of(extensions.begin(), extensions.end(), [&](const VkExtensionProperties& e) {
    return std::strcmp(e.extensionName, name) == 0;
  });
}

DeviceDescription describe(VkPhysicalDevice device, uint32_t index) {
  VkPhysicalDeviceIDProperties id{};
  id.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES;
  VkPhysicalDeviceSubgroupProperties subgroups{};
  subgroups.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  id.pNext = &subgroups;
  // Chained only where the device has the extension (the instance asks for Vulkan 1.1).
  VkPhysicalDeviceDriverPropertiesKHR driver{};
  driver.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES_KHR;
  const bool has_driver_properties =
      device_extension_available(device, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
  if (has_driver_properties) subgroups.pNext = &driver;
  VkPhysicalDeviceProperties2 properties{};
  properties.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  properties.pNext = &id;
  vkGetPhysicalDeviceProperties2(device, &properties);
  VkPhysicalDeviceMemoryProperties memory{};
  vkGetPhysicalDeviceMemoryProperties(device, &memory);
  DeviceDescription d;
  d.index = index;
  d.name = properties.properties.deviceName;
  d.type = type_name(properties.properties.deviceType);
  d.vendor_id = properties.properties.vendorID;
  d.device_id = properties.properties.deviceID;
  d.driver_version = properties.properties.driverVersion;
  d.api_version = properties.properties.apiVersion;
  std::copy(std::begin(id.deviceUUID), std::end(id.deviceUUID), d.uuid.begin());
  d.has_compute_queue = compute_queue_family(device).has_value();
  if (has_driver_properties) {
    d.driver_name = driver.driverName;
    d.driver_info = driver.driverInfo;
  }
  for (uint32_t h = 0; h < memory.memoryHeapCount; ++h) {
    d.memory_heaps.push_back({memory.memoryHeaps[h].size, (memory.memoryHeaps[h].flags &
                                                           VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0});
  }
  const VkPhysicalDeviceLimits& limits = properties.properties.limits;
  d.subgroup_size = subgroups.subgroupSize;
  d.max_storage_buffer_range = limits.maxStorageBufferRange;
  std::copy(std::begin(limits.maxComputeWorkGroupSize), std::end(limits.maxComputeWorkGroupSize),
            d.max_workgroup_size.begin());
  d.max_workgroup_invocations = limits.maxComputeWorkGroupInvocations;
  d.max_push_constants_size = limits.maxPushConstantsSize;
  return d;
}

VkInstance create_bare_instance(const std::vector<const char*>& layers,
                                const std::vector<const char*>& extensions, const void* next) {
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "ServeScope";
  app.pEngineName = "ServeScope";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pNext = next;
  info.pApplicationInfo = &app;
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  VkInstance instance = VK_NULL_HANDLE;
  const std::set<std::string> libraries_before = loaded_libraries();
  const VkResult result = vkCreateInstance(&info, nullptr, &instance);
  keep_libraries_loaded_since(libraries_before);  // the drivers it opened stay (see header)
  if (result == VK_ERROR_INCOMPATIBLE_DRIVER) {
    throw BackendError(
        "Vulkan: no Vulkan 1.1 driver is installed (for a CPU implementation install Mesa's "
        "lavapipe, e.g. the mesa-vulkan-drivers package); use --backend cpu");
  }
  check_startup(result, "creating the instance");
  return instance;
}

std::vector<VkPhysicalDevice> physical_devices(VkInstance instance) {
  uint32_t count = 0;
  check_startup(vkEnumeratePhysicalDevices(instance, &count, nullptr), "listing devices");
  std::vector<VkPhysicalDevice> devices(count);
  check_startup(vkEnumeratePhysicalDevices(instance, &count, devices.data()), "listing devices");
  devices.resize(count);
  return devices;
}

}  // namespace

void ValidationLog::add(const std::string& message) {
  std::lock_guard lock(mutex_);
  messages_.push_back(message);
}

size_t ValidationLog::count() const {
  std::lock_guard lock(mutex_);
  return messages_.size();
}

std::vector<std::string> ValidationLog::messages() const {
  std::lock_guard lock(mutex_);
  return messages_;
}

std::vector<DeviceDescription> list_devices() {
  load_vulkan_functions();
  VkInstance instance = create_bare_instance({}, {}, nullptr);
  std::vector<DeviceDescription> result;
  try {
    const auto devices = physical_devices(instance);
    for (uint32_t i = 0; i < devices.size(); ++i) result.push_back(describe(devices[i], i));
  } catch (...) {
    vkDestroyInstance(instance, nullptr);
    throw;
  }
  vkDestroyInstance(instance, nullptr);
  return result;
}

uint32_t choose_device(const std::vector<DeviceDescription>& devices) {
  std::optional<uint32_t> best;
  for (uint32_t i = 0; i < devices.size(); ++i) {
    if (!devices[i].has_compute_queue) continue;
    if (!best || preference_rank(devices[i].type) < preference_rank(devices[*best].type)) best = i;
  }
  if (!best) throw BackendError("Vulkan: no device with a compute queue; use --backend cpu");
  return *best;
}

VulkanContext::VulkanContext(const ContextOptions& options) {
  load_vulkan_functions();
  create_instance(options.validation.value_or(validation_requested_by_environment()));
  try {
    const auto devices = physical_devices(instance_);
    if (devices.empty()) {
      throw BackendError("Vulkan: the loader found no device; use --backend cpu");
    }
    std::vector<DeviceDescription> descriptions;
    for (uint32_t i = 0; i < devices.size(); ++i) descriptions.push_back(describe(devices[i], i));
    uint32_t chosen = 0;
    if (options.device_index) {
      chosen = *options.device_index;
      if (chosen >= devices.size()) {
        throw BackendError("Vulkan: --device " + std::to_string(chosen) + " does not exist; " +
                           std::to_string(devices.size()) + " device(s) found (0.." +
                           std::to_string(devices.size() - 1) + ")");
      }
      if (!descriptions[chosen].has_compute_queue) {
        throw BackendError("Vulkan: device " + std::to_string(chosen) + " (" +
                           descriptions[chosen].name + ") has no compute queue");
      }
    } else {
      chosen = choose_device(descriptions);
    }
    physical_device_ = devices[chosen];
    description_ = descriptions[chosen];
    create_device();
  } catch (...) {
    if (messenger_ != VK_NULL_HANDLE) {
      auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
      if (destroy) destroy(instance_, messenger_, nullptr);
    }
    vkDestroyInstance(instance_, nullptr);
    throw;
  }
}

void VulkanContext::create_instance(bool validation) {
  std::vector<const char*> layers;
  std::vector<const char*> extensions;
  validation_enabled_ = validation && layer_available(kValidationLayer) &&
                        instance_extension_available(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  if (validation && !validation_enabled_) {
    validation_log_.add(
        "validation requested but VK_LAYER_KHRONOS_validation or VK_EXT_debug_utils is missing "
        "(install vulkan-validationlayers)");
  }
  VkDebugUtilsMessengerCreateInfoEXT debug_info = messenger_info(&validation_log_);
  if (validation_enabled_) {
    layers.push_back(kValidationLayer);
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  // Chaining the messenger info also reports problems in vkCreateInstance itself.
  instance_ = create_bare_instance(layers, extensions, validation_enabled_ ? &debug_info : nullptr);
  if (validation_enabled_) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
    if (create == nullptr || create(instance_, &debug_info, nullptr, &messenger_) != VK_SUCCESS) {
      messenger_ = VK_NULL_HANDLE;
      validation_log_.add("validation: could not create the debug messenger");
    }
  }
}

void VulkanContext::create_device() {
  vkGetPhysicalDeviceProperties(physical_device_, &properties_);
  vkGetPhysicalDeviceMemoryProperties(physical_device_, &memory_properties_);
  queue_family_ = *compute_queue_family(physical_device_);
  uint32_t count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical_device_, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  vkGetPhysicalDeviceQueueFamilyProperties(physical_device_, &count, families.data());
  timestamp_valid_bits_ =
      properties_.limits.timestampPeriod > 0.0f ? families[queue_family_].timestampValidBits : 0;

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue_info{};
  queue_info.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queue_info.queueFamilyIndex = queue_family_;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;
  VkDeviceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue_info;
  check_startup(vkCreateDevice(physical_device_, &info, nullptr, &device_),
                "creating the device on " + description_.name);
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
}

VulkanContext::~VulkanContext() {
  if (device_ != VK_NULL_HANDLE) {
    vkDeviceWaitIdle(device_);
    vkDestroyDevice(device_, nullptr);
  }
  if (messenger_ != VK_NULL_HANDLE) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance_, messenger_, nullptr);
  }
  vkDestroyInstance(instance_, nullptr);
}

}  // namespace servescope::compute::vulkan
