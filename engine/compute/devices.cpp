#include "engine/compute/devices.h"

#include <sys/utsname.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include "engine/core/error.h"

namespace servescope::compute {
namespace {

std::string first_line(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// sysfs cache sizes: "48K", "2048K", "32M".
uint64_t parse_size(const std::string& text) {
  size_t used = 0;
  uint64_t value = 0;
  try {
    value = std::stoull(text, &used);
  } catch (const std::exception&) {
    return 0;
  }
  const std::string unit = text.substr(used);
  if (unit == "K") return value << 10;
  if (unit == "M") return value << 20;
  if (unit == "G") return value << 30;
  return value;
}

// "0-1,4" -> 3
int count_cpus(const std::string& list) {
  int count = 0;
  size_t at = 0;
  while (at < list.size()) {
    const size_t comma = std::min(list.find(',', at), list.size());
    const std::string part = list.substr(at, comma - at);
    const size_t dash = part.find('-');
    try {
      count += dash == std::string::npos
                   ? 1
                   : std::stoi(part.substr(dash + 1)) - std::stoi(part.substr(0, dash)) + 1;
    } catch (const std::exception&) {
      return 0;
    }
    at = comma + 1;
  }
  return count;
}

std::string cpu_model_name(const std::filesystem::path& root) {
  std::ifstream in(root / "proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
  }
  utsname machine{};
  return uname(&machine) == 0 ? std::string(machine.machine) : "unknown CPU";
}

}  // namespace

uint64_t CpuDescription::last_level_cache_bytes() const {
  uint64_t best = 0;
  int best_level = 0;
  for (const CpuCache& c : caches) {
    if (c.type == "Instruction" || c.level < best_level) continue;
    if (c.level > best_level || c.bytes > best) best = c.bytes;
    best_level = c.level;
  }
  return best;
}

CpuDescription describe_cpu(const std::filesystem::path& root) {
  CpuDescription cpu;
  cpu.model_name = cpu_model_name(root);
  cpu.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::filesystem::path dir = root / "sys/devices/system/cpu/cpu0/cache";
  for (int index = 0;; ++index) {
    const std::filesystem::path entry = dir / ("index" + std::to_string(index));
    if (!std::filesystem::exists(entry / "size")) break;
    CpuCache cache;
    try {
      cache.level = std::stoi(first_line(entry / "level"));
    } catch (const std::exception&) {
      continue;
    }
    cache.type = first_line(entry / "type");
    cache.bytes = parse_size(first_line(entry / "size"));
    cache.shared_by_cpus = count_cpus(first_line(entry / "shared_cpu_list"));
    cpu.caches.push_back(cache);
  }
  return cpu;
}

DeviceList list_devices() {
  DeviceList list;
  list.cpu = describe_cpu();
  try {
    list.vulkan = vulkan::list_devices();
  } catch (const Error& e) {
    list.vulkan_unavailable = e.what();
  }
  return list;
}

bool runs_on_the_cpu(const vulkan::DeviceDescription& device) { return device.type == "cpu"; }

std::optional<uint32_t> default_vulkan_device(const DeviceList& devices) {
  std::vector<vulkan::DeviceDescription> hardware;
  for (const vulkan::DeviceDescription& d : devices.vulkan) {
    if (d.has_compute_queue && !runs_on_the_cpu(d)) hardware.push_back(d);
  }
  if (hardware.empty()) return std::nullopt;
  return hardware[vulkan::choose_device(hardware)].index;
}

}  // namespace servescope::compute
