// The devices ServeScope can compute on, as a device picker shows them: the CPU (the cpu
// backend) and every Vulkan device the loader reports (the vulkan backend; BackendChoice::device
// is the index into `vulkan`).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/compute/vulkan/vulkan_context.h"

namespace servescope::compute {

struct CpuCache {
  int level = 0;
  std::string type;  // "Data", "Instruction" or "Unified"
  uint64_t bytes = 0;
  int shared_by_cpus = 0;  // logical CPUs sharing this cache
};

struct CpuDescription {
  std::string model_name;        // /proc/cpuinfo's "model name" (else the machine type)
  int cores = 0;                 // logical CPUs this process may use
  std::vector<CpuCache> caches;  // of CPU 0, from sysfs; empty where sysfs has none

  // The largest data or unified cache, 0 when unknown.
  uint64_t last_level_cache_bytes() const;
};

struct DeviceList {
  CpuDescription cpu;
  std::vector<vulkan::DeviceDescription> vulkan;
  // Why there are no Vulkan devices (no loader, no driver), empty when the loader answered.
  std::string vulkan_unavailable;
};

// Reads /proc/cpuinfo and /sys/devices/system/cpu/cpu0/cache under `root` (tests pass a copy).
CpuDescription describe_cpu(const std::filesystem::path& root = "/");

// Never throws for a missing Vulkan loader or driver: the CPU is always there.
DeviceList list_devices();

// A Vulkan device that computes on the CPU's own cores (Mesa's lavapipe reports the type
// "cpu"): it shares them with the CPU backend, which is several times faster on them.
bool runs_on_the_cpu(const vulkan::DeviceDescription& device);

// What a first run computes on: the best hardware GPU with a compute queue (discrete before
// integrated before virtual), as its index in `devices.vulkan`; nullopt when there is none,
// and the CPU backend is the default.
std::optional<uint32_t> default_vulkan_device(const DeviceList& devices);

}  // namespace servescope::compute
