// Turning VkResult failures into BackendError with a message a person can act on.
#pragma once

#include <vulkan/vulkan.h>

#include <string>

namespace servescope::compute::vulkan {

// "VK_ERROR_DEVICE_LOST", ...
const char* result_name(VkResult result);

// Throws BackendError("Vulkan: <what> failed: <result>") unless result is VK_SUCCESS.
void check(VkResult result, const std::string& what);

}  // namespace servescope::compute::vulkan
