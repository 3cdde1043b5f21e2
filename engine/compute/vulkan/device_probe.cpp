#include "engine/compute/vulkan/device_probe.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace servescope::compute::vulkan {
namespace {

// Part of the cache file name: a changed probe kernel must not read an old probe's numbers.
constexpr int kProbeVersion = 4;

std::string hex(std::span<const uint8_t> bytes) {
  std::string out;
  char digits[3];
  for (const uint8_t b : bytes) {
    std::snprintf(digits, sizeof digits, "%02x", b);
    out += digits;
  }
  return out;
}

std::optional<DeviceRoofs> read_cache(const std::filesystem::path& file) {
  std::ifstream in(file);
  DeviceRoofs roofs;
  std::string key;
  double value = 0.0;
  int found = 0;
  while (in >> key >> value) {
    if (key == "stream_gb_per_s") roofs.memory_gb_per_s = value, ++found;
    if (key == "compute_gflop_per_s") roofs.compute_gflop_per_s = value, ++found;
  }
  if (found != 2 || roofs.memory_gb_per_s <= 0.0 || roofs.compute_gflop_per_s <= 0.0)
    return std::nullopt;
  return roofs;
}

}  // namespace

std::optional<std::filesystem::path> cache_directory() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::filesystem::path(xdg) / "servescope";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::filesystem::path(home) / ".cache" / "servescope";
  }
  return std::nullopt;
}

std::string hex_uuid(const DeviceDescription& device) { return hex(device.uuid); }

std::optional<std::filesystem::path> roofs_cache_file(const DeviceDescription& device) {
  const auto dir = cache_directory();
  if (!dir) return std::nullopt;
  return *dir / ("vulkan-roofs-v" + std::to_string(kProbeVersion) + "-" + hex(device.uuid) + "-" +
                 std::to_string(device.driver_version) + ".txt");
}

ProbedRoofs probe_roofs(VulkanBackend& backend) {
  ProbedRoofs result;
  const auto file = roofs_cache_file(backend.device());
  if (file) {
    result.cache_file = *file;
    if (const auto cached = read_cache(*file)) {
      result.roofs = *cached;
      result.from_cache = true;
      return result;
    }
  }
  result.roofs = backend.measure_roofs();
  if (file) {
    std::error_code ignored;
    std::filesystem::create_directories(file->parent_path(), ignored);
    std::ofstream out(*file);
    out.precision(17);
    out << "stream_gb_per_s " << result.roofs.memory_gb_per_s << "\n"
        << "compute_gflop_per_s " << result.roofs.compute_gflop_per_s << "\n";
  }
  return result;
}

}  // namespace servescope::compute::vulkan
