#include "engine/compute/vulkan/vulkan_check.h"

#include <string>

#include "engine/core/error.h"

namespace servescope::compute::vulkan {

const char* result_name(VkResult result) {
  switch (result) {
    case VK_SUCCESS:
      return "VK_SUCCESS";
    case VK_NOT_READY:
      return "VK_NOT_READY";
    case VK_TIMEOUT:
      return "VK_TIMEOUT";
    case VK_INCOMPLETE:
      return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED:
      return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST:
      return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED:
      return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT:
      return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT:
      return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT:
      return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS:
      return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FRAGMENTED_POOL:
      return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_OUT_OF_POOL_MEMORY:
      return "VK_ERROR_OUT_OF_POOL_MEMORY";
    case VK_ERROR_FRAGMENTATION:
      return "VK_ERROR_FRAGMENTATION";
    case VK_ERROR_UNKNOWN:
      return "VK_ERROR_UNKNOWN";
    default:
      return "an unknown VkResult";
  }
}

namespace {

// "<what> failed: VK_ERROR_..." (with the number when the name is unknown).
std::string failure(VkResult result, const std::string& what) {
  std::string text = what + " failed: " + result_name(result);
  if (text.ends_with("an unknown VkResult")) text += " (" + std::to_string(result) + ")";
  return text;
}

}  // namespace

void check_startup(VkResult result, const std::string& what) {
  if (result == VK_SUCCESS) return;
  throw BackendError("Vulkan could not start: " + failure(result, what) +
                     " (the Vulkan driver or its ICD file is broken; the CPU backend works: "
                     "--backend cpu)");
}

void check(VkResult result, const std::string& what) {
  if (result == VK_SUCCESS) return;
  std::string message = "Vulkan: " + failure(result, what);
  if (result == VK_ERROR_DEVICE_LOST) {
    message += " (the device was lost; restart with --backend cpu)";
  } else if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY) {
    message += " (try a smaller model, a quantised one, or --backend cpu)";
  }
  throw BackendError(message);
}

}  // namespace servescope::compute::vulkan
