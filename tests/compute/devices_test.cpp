// compute::describe_cpu on a made-up /proc and sysfs (so the parsing is checked against
// known answers), and compute::list_devices on this machine.
#include "engine/compute/devices.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <string>

namespace servescope::compute {
namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// index: level, type, size, shared_cpu_list
void write_cache(const fs::path& root, int index, const std::string& level, const std::string& type,
                 const std::string& size, const std::string& shared) {
  const fs::path dir =
      root / "sys/devices/system/cpu/cpu0/cache" / ("index" + std::to_string(index));
  write_file(dir / "level", level + "\n");
  write_file(dir / "type", type + "\n");
  write_file(dir / "size", size + "\n");
  write_file(dir / "shared_cpu_list", shared + "\n");
}

TEST(DescribeCpu, ReadsModelNameAndCachesFromProcAndSysfs) {
  const fs::path root = fs::path(testing::TempDir()) / ("fake_root_" + std::to_string(getpid()));
  fs::remove_all(root);
  write_file(root / "proc/cpuinfo",
             "processor\t: 0\nvendor_id\t: Made Up\nmodel name\t: Example CPU 9000 @ 3.0GHz\n"
             "processor\t: 1\nmodel name\t: Example CPU 9000 @ 3.0GHz\n");
  write_cache(root, 0, "1", "Data", "32K", "0");
  write_cache(root, 1, "1", "Instruction", "32K", "0");
  write_cache(root, 2, "2", "Unified", "1024K", "0-1");
  write_cache(root, 3, "3", "Unified", "16M", "0-3,8-11");

  const CpuDescription cpu = describe_cpu(root);
  EXPECT_EQ(cpu.model_name, "Example CPU 9000 @ 3.0GHz");
  ASSERT_EQ(cpu.caches.size(), 4u);
  EXPECT_EQ(cpu.caches[0].level, 1);
  EXPECT_EQ(cpu.caches[0].type, "Data");
  EXPECT_EQ(cpu.caches[0].bytes, 32u * 1024);
  EXPECT_EQ(cpu.caches[0].shared_by_cpus, 1);
  EXPECT_EQ(cpu.caches[2].bytes, 1024u * 1024);
  EXPECT_EQ(cpu.caches[2].shared_by_cpus, 2);
  EXPECT_EQ(cpu.caches[3].bytes, 16u << 20);
  EXPECT_EQ(cpu.caches[3].shared_by_cpus, 8);
  EXPECT_EQ(cpu.last_level_cache_bytes(), 16u << 20);
  fs::remove_all(root);
}

TEST(DescribeCpu, WithoutSysfsCachesAreUnknown) {
  const fs::path root = fs::path(testing::TempDir()) / ("bare_root_" + std::to_string(getpid()));
  fs::remove_all(root);
  write_file(root / "proc/cpuinfo", "processor\t: 0\n");  // no model name (as on some ARM)
  const CpuDescription cpu = describe_cpu(root);
  EXPECT_FALSE(cpu.model_name.empty());  // the machine type instead
  EXPECT_TRUE(cpu.caches.empty());
  EXPECT_EQ(cpu.last_level_cache_bytes(), 0u);
  fs::remove_all(root);
}

vulkan::DeviceDescription device(uint32_t index, const std::string& type, bool compute = true) {
  vulkan::DeviceDescription d;
  d.index = index;
  d.type = type;
  d.name = type + " device";
  d.has_compute_queue = compute;
  return d;
}

TEST(DefaultDevice, SoftwareVulkanLeavesTheCpuBackendTheDefault) {
  DeviceList devices;
  devices.vulkan = {device(0, "cpu")};  // lavapipe alone
  EXPECT_TRUE(runs_on_the_cpu(devices.vulkan[0]));
  EXPECT_EQ(default_vulkan_device(devices), std::nullopt);
  devices.vulkan.clear();
  EXPECT_EQ(default_vulkan_device(devices), std::nullopt);
}

TEST(DefaultDevice, AHardwareGpuIsTheDefaultAndTheBestOneWins) {
  DeviceList devices;
  devices.vulkan = {device(0, "cpu"), device(1, "integrated"), device(2, "discrete")};
  EXPECT_EQ(default_vulkan_device(devices), std::optional<uint32_t>(2));
  devices.vulkan = {device(0, "cpu"), device(1, "integrated")};
  EXPECT_EQ(default_vulkan_device(devices), std::optional<uint32_t>(1));
  // A GPU that cannot compute is no choice.
  devices.vulkan = {device(0, "discrete", false), device(1, "cpu")};
  EXPECT_EQ(default_vulkan_device(devices), std::nullopt);
}

TEST(ListDevices, TheCpuIsAlwaysThere) {
  const DeviceList devices = list_devices();
  EXPECT_EQ(devices.cpu.cores, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  EXPECT_FALSE(devices.cpu.model_name.empty());
  // Either the loader answered (devices are numbered in order) or we are told why not.
  EXPECT_TRUE(!devices.vulkan.empty() || !devices.vulkan_unavailable.empty());
  for (size_t i = 0; i < devices.vulkan.size(); ++i) {
    EXPECT_EQ(devices.vulkan[i].index, i);
    EXPECT_FALSE(devices.vulkan[i].memory_heaps.empty());
    EXPECT_GT(devices.vulkan[i].max_storage_buffer_range, 0u);
  }
}

}  // namespace
}  // namespace servescope::compute
