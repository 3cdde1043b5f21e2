#include "engine/serving/kv_budget.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "engine/core/error.h"

namespace servescope::serving {
namespace {

// MemAvailable from /proc/meminfo, in bytes; 0 when it cannot be read.
uint64_t available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    uint64_t kib = 0;
    fields >> kib;
    return kib * 1024;
  }
  return 0;
}

}  // namespace

uint64_t default_kv_budget_bytes() {
  const uint64_t available = available_memory_bytes();
  return available == 0 ? kDefaultKvBudgetBytes : std::min(kDefaultKvBudgetBytes, available / 4);
}

uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

int64_t kv_blocks_for_budget(const KvLayout& layout, uint64_t budget_bytes, int64_t needed_blocks) {
  validate(layout);
  const uint64_t per_block = kv_bytes_per_block(layout);
  if (budget_bytes < per_block) {
    throw InputError("the KV budget of " + iec_bytes(budget_bytes) +
                     " is less than one KV block (" + iec_bytes(per_block) + ": " +
                     std::to_string(layout.block_size) + " tokens)");
  }
  const int64_t addressable = std::numeric_limits<int32_t>::max() / layout.block_size;
  const auto affordable = static_cast<int64_t>(
      std::min<uint64_t>(budget_bytes / per_block, static_cast<uint64_t>(addressable)));
  return std::max<int64_t>(1, std::min(affordable, needed_blocks));
}

std::string iec_bytes(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  const char* const units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(units)) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  return text;
}

}  // namespace servescope::serving
