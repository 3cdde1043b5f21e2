// servescope-cli devices: the CPU and every Vulkan device, as a device picker shows them.
#include <ostream>

#include "app/cli/command_support.h"
#include "engine/compute/devices.h"
#include "engine/core/error.h"

namespace servescope::cli {

using nlohmann::json;

namespace {

// "1.3.230" from a Vulkan packed version.
std::string vulkan_version(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) +
         "." + std::to_string(VK_API_VERSION_PATCH(v));
}

json cpu_json(const compute::CpuDescription& cpu) {
  json caches = json::array();
  for (const compute::CpuCache& c : cpu.caches) {
    caches.push_back({{"level", c.level},
                      {"type", c.type},
                      {"bytes", c.bytes},
                      {"shared_by_cpus", c.shared_by_cpus}});
  }
  return {{"model_name", cpu.model_name},
          {"cores", cpu.cores},
          {"caches", caches},
          {"last_level_cache_bytes", cpu.last_level_cache_bytes()}};
}

json vulkan_json(const compute::vulkan::DeviceDescription& d, bool chosen_by_default) {
  json heaps = json::array();
  for (const auto& h : d.memory_heaps) {
    heaps.push_back({{"bytes", h.bytes}, {"device_local", h.device_local}});
  }
  return {{"index", d.index},
          {"name", d.name},
          {"type", d.type},
          {"default", chosen_by_default},
          {"vendor_id", d.vendor_id},
          {"device_id", d.device_id},
          {"api_version", vulkan_version(d.api_version)},
          {"driver_name", d.driver_name},
          {"driver_info", d.driver_info},
          {"driver_version", d.driver_version},
          {"has_compute_queue", d.has_compute_queue},
          {"memory_heaps", heaps},
          {"subgroup_size", d.subgroup_size},
          {"max_storage_buffer_range", d.max_storage_buffer_range},
          {"max_workgroup_size", d.max_workgroup_size},
          {"max_workgroup_invocations", d.max_workgroup_invocations},
          {"max_push_constants_size", d.max_push_constants_size}};
}

}  // namespace

int run_devices(const std::vector<std::string>& args, std::ostream& out) {
  const Options options(args, {});
  const compute::DeviceList devices = compute::list_devices();
  std::optional<uint32_t> best;
  try {
    if (!devices.vulkan.empty()) best = compute::vulkan::choose_device(devices.vulkan);
  } catch (const servescope::Error&) {
    // no device with a compute queue: none is the default
  }
  json vulkan = json::array();
  for (const auto& d : devices.vulkan) vulkan.push_back(vulkan_json(d, best == d.index));
  json doc = {{"cpu", cpu_json(devices.cpu)}, {"vulkan", vulkan}};
  if (!devices.vulkan_unavailable.empty()) doc["vulkan_unavailable"] = devices.vulkan_unavailable;
  out << doc.dump(2) << "\n";
  return 0;
}

}  // namespace servescope::cli
