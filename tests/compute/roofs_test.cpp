// The roof probe: what it measures (sizes from the plan, every weight type, positive rates on
// both backends) and its per-device cache. The rates themselves are timings: they live in the
// probe's output and BENCHMARKS, not in assertions.
#include "engine/compute/roofs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "engine/compute/cpu_backend.h"
#include "engine/compute/devices.h"
#include "engine/core/error.h"

namespace servescope::compute {
namespace {

// Small enough to run in a fraction of a second.
RoofPlan small_plan() {
  RoofPlan plan;
  plan.in_cache_bytes = 256 * 1024;
  plan.beyond_cache_bytes = 4 << 20;
  plan.matmul_tokens = 16;
  plan.matmul_rows = 128;
  plan.matmul_cols = 256;
  return plan;
}

void expect_measured(const Roofs& roofs, const RoofPlan& plan) {
  EXPECT_EQ(roofs.in_cache.working_set_bytes, plan.in_cache_bytes);  // whole 16 KiB rows
  EXPECT_EQ(roofs.beyond_cache.working_set_bytes, plan.beyond_cache_bytes);
  EXPECT_GT(roofs.in_cache.gb_per_s, 0.0);
  EXPECT_GT(roofs.beyond_cache.gb_per_s, 0.0);
  ASSERT_EQ(roofs.matmul.size(), 4u);
  const gguf::GgmlType types[] = {gguf::GgmlType::F32, gguf::GgmlType::F16, gguf::GgmlType::Q8_0,
                                  gguf::GgmlType::Q4_0};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(roofs.matmul[i].type, types[i]);
    EXPECT_GT(roofs.matmul[i].gflop_per_s, 0.0);
  }
  EXPECT_EQ(roofs.matmul_tokens, plan.matmul_tokens);
  EXPECT_FALSE(roofs.device.empty());
}

TEST(Roofs, MeasuresEveryRoofOnTheCpu) {
  auto backend = make_backend(BackendKind::kCpu);
  expect_measured(measure_roofs(*backend, small_plan()), small_plan());
}

TEST(Roofs, MeasuresEveryRoofOnVulkan) {
  std::unique_ptr<Backend> backend;
  try {
    backend = make_backend(BackendKind::kVulkan);
  } catch (const Error& e) {
    GTEST_SKIP() << "no Vulkan device: " << e.what();
  }
  const Roofs roofs = measure_roofs(*backend, small_plan());
  expect_measured(roofs, small_plan());
  EXPECT_EQ(roofs.backend, "vulkan");
}

// The working sets straddle the last-level cache where it is known.
TEST(Roofs, DefaultPlanSizesTheWorkingSetsFromTheCache) {
  auto backend = make_backend(BackendKind::kCpu);
  const RoofPlan plan = default_roof_plan(*backend);
  const uint64_t llc = describe_cpu().last_level_cache_bytes();
  EXPECT_EQ(plan.last_level_cache_bytes, llc);
  if (llc == 0) GTEST_SKIP() << "this machine's sysfs does not give the cache sizes";
  EXPECT_LT(plan.in_cache_bytes, llc);
  EXPECT_GT(plan.beyond_cache_bytes, llc);
}

// Measured once per device and cached; `fresh` measures again and rewrites the cache.
TEST(Roofs, CachedPerDeviceUntilAskedAfresh) {
  const std::string dir = testing::TempDir() + "/roofs_cache_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  auto backend = make_backend(BackendKind::kCpu);

  const CachedRoofs first = probe_device_roofs(*backend, false);
  EXPECT_FALSE(first.from_cache);
  ASSERT_TRUE(std::filesystem::exists(first.cache_file));
  EXPECT_EQ(first.cache_file.parent_path(), std::filesystem::path(dir) / "servescope");

  const CachedRoofs second = probe_device_roofs(*backend, false);
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(second.roofs.in_cache.gb_per_s, first.roofs.in_cache.gb_per_s);
  EXPECT_EQ(second.roofs.beyond_cache.working_set_bytes,
            first.roofs.beyond_cache.working_set_bytes);
  for (size_t i = 0; i < first.roofs.matmul.size(); ++i) {
    EXPECT_EQ(second.roofs.matmul[i].gflop_per_s, first.roofs.matmul[i].gflop_per_s);
  }

  // A damaged cache is measured again, not trusted.
  std::ofstream(first.cache_file) << "in_cache_gb_per_s banana\n";
  const CachedRoofs third = probe_device_roofs(*backend, false);
  EXPECT_FALSE(third.from_cache);
  EXPECT_TRUE(probe_device_roofs(*backend, false).from_cache);  // and rewritten
  std::filesystem::remove_all(dir);
  unsetenv("XDG_CACHE_HOME");
}

// 8-bit activations multiply Q8_0 and Q4_0 on other kernels, so their roofs are cached apart
// from the exact path's (a roofline would otherwise plot 8-bit points against exact roofs).
TEST(Roofs, EightBitActivationsAreCachedApartFromTheExactPath) {
  const std::string dir = testing::TempDir() + "/roofs_key_" + std::to_string(getpid());
  setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  CpuBackend exact(2, false);
  CpuBackend exact_again(2, false);
  CpuBackend eight_bit(2, true);
  const auto exact_file = roofs_cache_file(exact);
  ASSERT_TRUE(exact_file.has_value());
  EXPECT_EQ(roofs_cache_file(exact_again), exact_file);
  EXPECT_NE(roofs_cache_file(eight_bit), exact_file);
  unsetenv("XDG_CACHE_HOME");
}

}  // namespace
}  // namespace servescope::compute
