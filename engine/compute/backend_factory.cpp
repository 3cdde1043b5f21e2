#include "engine/compute/backend.h"
#include "engine/compute/cpu_backend.h"
#include "engine/compute/vulkan/vulkan_backend.h"
#include "engine/core/error.h"

namespace servescope::compute {

BackendKind parse_backend_kind(const std::string& name) {
  if (name == "cpu") return BackendKind::kCpu;
  if (name == "vulkan") return BackendKind::kVulkan;
  throw InputError("unknown backend '" + name + "'; choose one of: cpu, vulkan");
}

std::unique_ptr<Backend> make_backend(const BackendChoice& choice) {
  switch (choice.kind) {
    case BackendKind::kCpu:
      if (choice.device.value_or(0) != 0) {
        throw InputError("the cpu backend has one device, 0; got device " +
                         std::to_string(*choice.device) +
                         " (Vulkan devices need --backend vulkan)");
      }
      return std::make_unique<CpuBackend>(choice.threads, choice.quantised_activations);
    case BackendKind::kVulkan: {
      vulkan::VulkanBackendOptions options;
      options.context.device_index = choice.device;
      return std::make_unique<vulkan::VulkanBackend>(options);
    }
  }
  throw BackendError("unknown backend kind");
}

}  // namespace servescope::compute
