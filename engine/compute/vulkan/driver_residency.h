// Keeps the Vulkan drivers mapped once loaded.
//
// The Vulkan loader opens the installable client drivers (ICDs) in vkCreateInstance and closes
// them in vkDestroyInstance. A process that makes several instances (listing devices, then a
// backend; a GUI that switches devices; a test suite) would otherwise unload and reload the
// driver each time, repeating its start-up, and memory the driver keeps reachable from its
// own globals (lavapipe does) would be reported as leaked by LeakSanitizer once the library
// is gone, from "<unknown module>", on some processors and not others. Pinning the libraries
// costs nothing: a driver's pages stay mapped until the process exits, as they would have
// with a single instance.
#pragma once

#include <set>
#include <string>

namespace servescope::compute::vulkan {

// The file names of the shared objects mapped into this process now.
std::set<std::string> loaded_libraries();

// Marks every library loaded now but absent from `before` as never to be unloaded
// (dlopen with RTLD_NOLOAD | RTLD_NODELETE): what vkCreateInstance brought in stays.
void keep_libraries_loaded_since(const std::set<std::string>& before);

}  // namespace servescope::compute::vulkan
