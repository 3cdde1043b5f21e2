// The Vulkan functions the backend calls, loaded at run time from the system's Vulkan loader
// (libvulkan.so.1) instead of linked: where no loader is installed, ServeScope still starts,
// and asking for the Vulkan backend gives a BackendError (the app then offers the CPU).
// Each function is a pointer in this namespace with the API's own name, so calls read as
// plain Vulkan and find these pointers before the global prototypes of <vulkan/vulkan.h>.
#pragma once

#include <vulkan/vulkan.h>

namespace servescope::compute::vulkan {

// Core functions used by the backend (extension functions come from vkGetInstanceProcAddr).
#define SERVESCOPE_VULKAN_FUNCTIONS(X)        \
  X(vkAllocateCommandBuffers)                 \
  X(vkAllocateDescriptorSets)                 \
  X(vkAllocateMemory)                         \
  X(vkBeginCommandBuffer)                     \
  X(vkBindBufferMemory)                       \
  X(vkCmdBindDescriptorSets)                  \
  X(vkCmdBindPipeline)                        \
  X(vkCmdCopyBuffer)                          \
  X(vkCmdDispatch)                            \
  X(vkCmdFillBuffer)                          \
  X(vkCmdPipelineBarrier)                     \
  X(vkCmdPushConstants)                       \
  X(vkCmdResetQueryPool)                      \
  X(vkCmdWriteTimestamp)                      \
  X(vkCreateBuffer)                           \
  X(vkCreateCommandPool)                      \
  X(vkCreateComputePipelines)                 \
  X(vkCreateDescriptorPool)                   \
  X(vkCreateDescriptorSetLayout)              \
  X(vkCreateDevice)                           \
  X(vkCreateFence)                            \
  X(vkCreateInstance)                         \
  X(vkCreatePipelineLayout)                   \
  X(vkCreateQueryPool)                        \
  X(vkCreateShaderModule)                     \
  X(vkDestroyBuffer)                          \
  X(vkDestroyCommandPool)                     \
  X(vkDestroyDescriptorPool)                  \
  X(vkDestroyDescriptorSetLayout)             \
  X(vkDestroyDevice)                          \
  X(vkDestroyFence)                           \
  X(vkDestroyInstance)                        \
  X(vkDestroyPipeline)                        \
  X(vkDestroyPipelineLayout)                  \
  X(vkDestroyQueryPool)                       \
  X(vkDestroyShaderModule)                    \
  X(vkDeviceWaitIdle)                         \
  X(vkEndCommandBuffer)                       \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkEnumerateInstanceExtensionProperties)   \
  X(vkEnumerateInstanceLayerProperties)       \
  X(vkEnumeratePhysicalDevices)               \
  X(vkFreeMemory)                             \
  X(vkGetBufferMemoryRequirements)            \
  X(vkGetDeviceQueue)                         \
  X(vkGetInstanceProcAddr)                    \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkGetQueryPoolResults)                    \
  X(vkMapMemory)                              \
  X(vkQueueSubmit)                            \
  X(vkResetCommandPool)                       \
  X(vkResetDescriptorPool)                    \
  X(vkResetFences)                            \
  X(vkUpdateDescriptorSets)                   \
  X(vkWaitForFences)

#define SERVESCOPE_DECLARE_VULKAN_FUNCTION(name) extern PFN_##name name;
SERVESCOPE_VULKAN_FUNCTIONS(SERVESCOPE_DECLARE_VULKAN_FUNCTION)
#undef SERVESCOPE_DECLARE_VULKAN_FUNCTION

// Loads the loader library (SERVESCOPE_VULKAN_LIBRARY overrides its name, for tests) and every
// function above, once per process. BackendError with a message a person can act on if the
// library or a function is missing; later calls repeat the same error.
void load_vulkan_functions();

}  // namespace servescope::compute::vulkan
