// The device's measured roofs (streaming GB/s, arithmetic GFLOP/s) for the roofline panel and
// `servescope-cli info --backend vulkan`: measured once per device and driver, then cached in
// $XDG_CACHE_HOME/servescope (or ~/.cache/servescope) under the device UUID and driver version.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "engine/compute/vulkan/vulkan_backend.h"

namespace servescope::compute::vulkan {

struct ProbedRoofs {
  DeviceRoofs roofs;
  bool from_cache = false;
  std::filesystem::path cache_file;  // empty when no cache directory is known
};

// $XDG_CACHE_HOME/servescope, else ~/.cache/servescope; nullopt without either variable.
std::optional<std::filesystem::path> cache_directory();

// The device's UUID as 32 hex digits (part of cache file names).
std::string hex_uuid(const DeviceDescription& device);

// The cache file of this device and driver, or nullopt without XDG_CACHE_HOME and HOME.
std::optional<std::filesystem::path> roofs_cache_file(const DeviceDescription& device);

// Cached roofs if present and readable, else measured now and cached (best effort: a cache
// that cannot be written is not an error).
ProbedRoofs probe_roofs(VulkanBackend& backend);

}  // namespace servescope::compute::vulkan
