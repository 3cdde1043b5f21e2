#include "engine/compute/backend.h"
#include "engine/compute/cpu_backend.h"
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
    case BackendKind::kVulkan:
      throw BackendError(
          "the Vulkan backend is not built yet in this version of ServeScope; use --backend cpu");
  }
  throw BackendError("unknown backend kind");
}

}  // namespace servescope::compute
