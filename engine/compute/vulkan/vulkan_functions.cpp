#include "engine/compute/vulkan/vulkan_functions.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "engine/core/error.h"

namespace servescope::compute::vulkan {

#define SERVESCOPE_DEFINE_VULKAN_FUNCTION(name) PFN_##name name = nullptr;
SERVESCOPE_VULKAN_FUNCTIONS(SERVESCOPE_DEFINE_VULKAN_FUNCTION)
#undef SERVESCOPE_DEFINE_VULKAN_FUNCTION

namespace {

// Empty on success, else why the functions could not be loaded.
std::string load_once() {
  const char* override_name = std::getenv("SERVESCOPE_VULKAN_LIBRARY");
  const std::string library = override_name != nullptr ? override_name : "libvulkan.so.1";
  // Kept open for the life of the process: the driver may hold threads and callbacks.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return "Vulkan: the Vulkan loader (" + library +
           ") is not installed; install the libvulkan1 package and a driver (for the CPU, "
           "Mesa's lavapipe in mesa-vulkan-drivers), or use --backend cpu";
  }
  std::string missing;
#define SERVESCOPE_LOAD_VULKAN_FUNCTION(name)                \
  name = reinterpret_cast<PFN_##name>(dlsym(handle, #name)); \
  if (name == nullptr && missing.empty()) missing = #name;
  SERVESCOPE_VULKAN_FUNCTIONS(SERVESCOPE_LOAD_VULKAN_FUNCTION)
#undef SERVESCOPE_LOAD_VULKAN_FUNCTION
  if (!missing.empty()) {
    return "Vulkan: the loader " + library + " lacks " + missing +
           " (ServeScope needs Vulkan 1.1); update libvulkan1 or use --backend cpu";
  }
  return {};
}

}  // namespace

void load_vulkan_functions() {
  static std::once_flag once;
  static std::string error;
  std::call_once(once, [] { error = load_once(); });
  if (!error.empty()) throw BackendError(error);
}

}  // namespace servescope::compute::vulkan
