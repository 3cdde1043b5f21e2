// Turning VkResult failures into BackendError with a message a person can act on.
#pragma once

#include <vulkan/vulkan.h>

#include <string>

namespace servescope::compute::vulkan {

// "VK_ERROR_DEVICE_LOST", ...
const char* result_name(VkResult result);

// Throws BackendError("Vulkan: <what> failed: <result>") unless result is VK_SUCCESS.
void check(VkResult result, const std::string& what);

// For the steps that start Vulkan (the instance, listing devices, the device): a failure there
// is a driver that cannot start, whatever VkResult it returns (a broken ICD file can return
// VK_ERROR_OUT_OF_HOST_MEMORY), so the message says so and that the CPU backend works, not
// "try a smaller model".
void check_startup(VkResult result, const std::string& what);

}  // namespace servescope::compute::vulkan
