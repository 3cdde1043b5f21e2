#include "engine/compute/backend.h"

#include <cstdlib>

#include "engine/compute/cpu_backend.h"
#include "engine/compute/vulkan/vulkan_backend.h"
#include "engine/core/error.h"

namespace servescope::compute {

BackendKind parse_backend_kind(const std::string& name) {
  if (name == "cpu") return BackendKind::kCpu;
  if (name == "vulkan") return BackendKind::kVulkan;
  throw InputError("unknown backend '" + name + "'; choose one of: cpu, vulkan");
}

std::unique_ptr<Backend> make_backend(BackendKind kind) {
  switch (kind) {
    case BackendKind::kCpu:
      return std::make_unique<CpuBackend>();
    case BackendKind::kVulkan: {
      // SERVESCOPE_VULKAN_DEVICE=N picks device N (as --device N); default: the best one.
      vulkan::VulkanBackendOptions options;
      if (const char* device = std::getenv("SERVESCOPE_VULKAN_DEVICE")) {
        options.context.device_index = static_cast<uint32_t>(std::strtoul(device, nullptr, 10));
      }
      return std::make_unique<vulkan::VulkanBackend>(options);
    }
  }
  throw BackendError("unknown backend kind");
}

}  // namespace servescope::compute
