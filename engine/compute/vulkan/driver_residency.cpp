#include "engine/compute/vulkan/driver_residency.h"

#include <dlfcn.h>
#include <link.h>

namespace servescope::compute::vulkan {

std::set<std::string> loaded_libraries() {
  std::set<std::string> names;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
          static_cast<std::set<std::string>*>(out)->insert(info->dlpi_name);
        }
        return 0;
      },
      &names);
  return names;
}

void keep_libraries_loaded_since(const std::set<std::string>& before) {
  for (const std::string& name : loaded_libraries()) {
    if (before.contains(name)) continue;
    // Already loaded, so this only adds the flag; the extra reference is never dropped.
    dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
  }
}

}  // namespace servescope::compute::vulkan
