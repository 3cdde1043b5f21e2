// The roof probe: what it measures (sizes from the plan, every weight type, positive rates on
// both backends) and its per-device cache. The rates themselves are timings: they live in the
// probe's output and BENCHMARKS, not in assertions.
#include "engine/compute/roofs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>

#include "engine/compute/cpu_backend.h"
#include "engine/compute/devices.h"
#include "engine/core/error.h"

namespace servescope::compute {
namespace {

// Small enough to run in a fraction of a second.
RoofPlan small_plan() {
  RoofPlan plan;
  plan.in_cache_bytes = 256 * 1024;
  plan.memory_bytes = 4 << 20;
  plan.matmul_tokens = 16;
  plan.matmul_rows = 128;
  plan.matmul_cols = 256;
  return plan;
}

void expect_measured(const Roofs& roofs, const RoofPlan& plan) {
  EXPECT_EQ(roofs.in_cache.working_set_bytes, plan.in_cache_bytes);  // whole 16 KiB rows
  EXPECT_EQ(roofs.memory.working_set_bytes, plan.memory_bytes);
  EXPECT_GT(roofs.in_cache.gb_per_s, 0.0);
  EXPECT_GT(roofs.memory.gb_per_s, 0.0);
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
  EXPECT_GT(plan.memory_bytes, llc);
}

// Probe options on a machine said to be quiet (or busy), measuring the small plan.
ProbeOptions probe_options(bool busy) {
  ProbeOptions options;
  options.machine_busy = [busy] { return busy; };
  options.measure = [](Backend& backend) { return measure_roofs(backend, small_plan()); };
  return options;
}

// Measured once per device and cached; `fresh` measures again and rewrites the cache.
TEST(Roofs, CachedPerDeviceUntilAskedAfresh) {
  const std::string dir = testing::TempDir() + "/roofs_cache_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  auto backend = make_backend(BackendKind::kCpu);
  const ProbeOptions quiet = probe_options(false);

  const CachedRoofs first = probe_device_roofs(*backend, quiet);
  EXPECT_FALSE(first.from_cache);
  ASSERT_TRUE(std::filesystem::exists(first.cache_file));
  EXPECT_EQ(first.cache_file.parent_path(), std::filesystem::path(dir) / "servescope");

  const CachedRoofs second = probe_device_roofs(*backend, quiet);
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(second.roofs.in_cache.gb_per_s, first.roofs.in_cache.gb_per_s);
  EXPECT_EQ(second.roofs.memory.working_set_bytes, first.roofs.memory.working_set_bytes);
  for (size_t i = 0; i < first.roofs.matmul.size(); ++i) {
    EXPECT_EQ(second.roofs.matmul[i].gflop_per_s, first.roofs.matmul[i].gflop_per_s);
  }

  // A damaged cache is measured again, not trusted.
  std::ofstream(first.cache_file) << "in_cache_gb_per_s banana\n";
  const CachedRoofs third = probe_device_roofs(*backend, quiet);
  EXPECT_FALSE(third.from_cache);
  EXPECT_TRUE(probe_device_roofs(*backend, quiet).from_cache);  // and rewritten
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

// Roofs with every figure `scale` times a base, as a fake probe would measure them.
Roofs fake_roofs(double scale) {
  Roofs r;
  r.backend = "cpu";
  r.device = "fake";
  r.last_level_cache_bytes = 32 << 20;
  r.in_cache = {8 << 20, 40.0 * scale};
  r.memory = {256 << 20, 10.0 * scale};
  r.matmul_tokens = 128;
  r.matmul_rows = 1024;
  r.matmul_cols = 2048;
  for (const gguf::GgmlType type :
       {gguf::GgmlType::F32, gguf::GgmlType::F16, gguf::GgmlType::Q8_0, gguf::GgmlType::Q4_0}) {
    r.matmul.push_back({type, 100.0 * scale});
  }
  return r;
}

// Run times injected in order; the best of them is the figure, and runs go on while the two
// fastest disagree (a machine busy for a while slows a run, never speeds one).
TEST(BestOfRuns, KeepsTheFastestOfSteadyRepeats) {
  const auto timings = [](std::vector<double> seconds) {
    auto next = std::make_shared<size_t>(0);
    return [seconds, next] { return seconds.at((*next)++); };
  };
  const BestRun steady = best_of_runs(timings({2.0, 1.0, 1.01, 9.0}));
  EXPECT_EQ(steady.runs, 3);
  EXPECT_DOUBLE_EQ(steady.seconds, 1.0);

  // A busy start: slow runs, then two that agree (milliseconds, well inside the time budget).
  const BestRun busy = best_of_runs(timings({3e-3, 2.5e-3, 2e-3, 1e-3, 1.6e-3, 1.02e-3, 5e-3}));
  EXPECT_EQ(busy.runs, 6);
  EXPECT_DOUBLE_EQ(busy.seconds, 1e-3);
  EXPECT_NEAR(busy.spread, 0.02, 1e-9);

  // Never steady (each run faster than the last by more than kSteadySpread): stops at kMaxRuns
  // with the fastest.
  std::vector<double> speeding_up;
  for (int i = 0; i <= kMaxRuns; ++i) speeding_up.push_back(20.0 - i);
  const auto scaled = [](std::vector<double> seconds, double scale) {
    for (double& s : seconds) s *= scale;
    return seconds;
  };
  const double short_runs = kMaxSecondsPerFigure / 1000.0;
  const BestRun capped = best_of_runs(timings(scaled(speeding_up, short_runs)));
  EXPECT_EQ(capped.runs, kMaxRuns);
  EXPECT_DOUBLE_EQ(capped.seconds, (20.0 - (kMaxRuns - 1)) * short_runs);
  // Long runs: past kMinRuns, no more than kMaxSecondsPerFigure of them.
  const BestRun budgeted = best_of_runs(timings(scaled(speeding_up, kMaxSecondsPerFigure / 40.0)));
  EXPECT_EQ(budgeted.runs, 3);  // 20 + 19 + 18 = 57 fortieths of the budget
  EXPECT_DOUBLE_EQ(budgeted.seconds, 18.0 * kMaxSecondsPerFigure / 40.0);
}

// A probe measured while the machine was busy is measured again once it is quiet, and the
// cache keeps the higher figures: slower measurements never lower a roof.
TEST(Roofs, BusyProbesAreTakenAgainAndCachedRoofsOnlyGoUp) {
  const std::string dir = testing::TempDir() + "/roofs_busy_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  auto backend = make_backend(BackendKind::kCpu);
  const auto probe = [&](double scale, bool busy, bool fresh = false) {
    ProbeOptions options;
    options.fresh = fresh;
    options.machine_busy = [busy] { return busy; };
    options.measure = [scale](Backend&) { return fake_roofs(scale); };
    return probe_device_roofs(*backend, options);
  };

  const CachedRoofs busy = probe(0.5, true);  // under load: half speed
  EXPECT_TRUE(busy.roofs.measured_busy);
  EXPECT_TRUE(probe(0.4, true).from_cache);       // still busy: measuring now would not do better
  const CachedRoofs quieter = probe(1.0, false);  // quiet now: the busy roofs are measured again
  EXPECT_FALSE(quieter.from_cache);
  EXPECT_FALSE(quieter.roofs.measured_busy);
  EXPECT_DOUBLE_EQ(quieter.roofs.in_cache.gb_per_s, 40.0);
  EXPECT_TRUE(probe(0.1, false).from_cache);  // quiet roofs are kept

  const CachedRoofs slower = probe(0.3, true, true);  // a fresh probe while busy: lower figures
  EXPECT_FALSE(slower.from_cache);
  EXPECT_DOUBLE_EQ(slower.roofs.in_cache.gb_per_s, 40.0);
  EXPECT_DOUBLE_EQ(slower.roofs.memory.gb_per_s, 10.0);
  for (const MatmulRoof& m : slower.roofs.matmul) EXPECT_DOUBLE_EQ(m.gflop_per_s, 100.0);
  EXPECT_FALSE(slower.roofs.measured_busy);  // what is kept was measured quiet

  // A step that beat a roof raises it in the cache, which says where the figure came from.
  Roofs raised = slower.roofs;
  StepRoofs judged = step_roofs(raised, gguf::GgmlType::F32);
  ASSERT_TRUE(raise_roofs_to_step(judged, {1'000'000'000, 0.5e9, 0.02}));  // 50 GB/s, memory
  apply_raised_roofs(raised, judged, gguf::GgmlType::F32, "a step of test.gguf");
  ASSERT_TRUE(persist_raised_roofs(*backend, raised));
  const CachedRoofs kept = probe(0.1, false);
  EXPECT_TRUE(kept.from_cache);
  EXPECT_DOUBLE_EQ(kept.roofs.memory.gb_per_s, 50.0);
  EXPECT_TRUE(kept.roofs.memory.raised_by_step);
  // The cache delivered what memory did: its roof follows, from the same step.
  EXPECT_TRUE(kept.roofs.in_cache.raised_by_step);
  EXPECT_DOUBLE_EQ(kept.roofs.in_cache.gb_per_s, 50.0);
  // ... and which step it was, for a later model on the same device.
  EXPECT_EQ(kept.roofs.memory.raised_by, "a step of test.gguf");
  EXPECT_EQ(kept.roofs.in_cache.raised_by, "a step of test.gguf");
  EXPECT_EQ(step_roofs(kept.roofs, gguf::GgmlType::F32).memory_raised_by, "a step of test.gguf");
  std::filesystem::remove_all(dir);
  unsetenv("XDG_CACHE_HOME");
}

// A model whose weights and KV fit the last-level cache is judged against the cache roof.
TEST(StepRoofs, TheWorkingSetPicksCacheOrMemory) {
  StepRoofs roofs = step_roofs(fake_roofs(1.0), gguf::GgmlType::Q8_0);
  EXPECT_EQ(roofs.cache_bytes, uint64_t{32} << 20);
  EXPECT_DOUBLE_EQ(roofs.compute_gflop_per_s, 100.0);
  EXPECT_EQ(bandwidth_roof_for(roofs, 17 << 20), BandwidthRoofKind::kCache);
  EXPECT_EQ(bandwidth_roof_for(roofs, 32 << 20), BandwidthRoofKind::kCache);
  EXPECT_EQ(bandwidth_roof_for(roofs, (32 << 20) + 1), BandwidthRoofKind::kMemory);
  // A GPU's cache is unknown: the probe's in-cache working set is what is known to fit.
  Roofs gpu = fake_roofs(1.0);
  gpu.last_level_cache_bytes = 0;
  roofs = step_roofs(gpu, gguf::GgmlType::F32);
  EXPECT_EQ(bandwidth_roof_for(roofs, 8 << 20), BandwidthRoofKind::kCache);
  EXPECT_EQ(bandwidth_roof_for(roofs, 9 << 20), BandwidthRoofKind::kMemory);
}

// Main memory above the cache would put its ridge left of the cache's: the cache follows.
TEST(StepRoofs, TheCacheRoofIsNeverBelowMainMemorys) {
  StepRoofs roofs = step_roofs(fake_roofs(1.0), gguf::GgmlType::F32);  // 40, 10 GB/s
  const MeasuredStep fast{1'600'000'000, 0.8e9, 0.032};  // 50 GB/s from main memory
  EXPECT_TRUE(raise_roofs_to_step(roofs, fast));
  EXPECT_DOUBLE_EQ(roofs.memory_gb_per_s, 50.0);
  EXPECT_DOUBLE_EQ(roofs.cache_gb_per_s, 50.0);
  EXPECT_TRUE(roofs.cache_raised);
  // A probe whose memory figure came out above its cache figure (a busy moment) reads the same.
  Roofs probed = fake_roofs(1.0);
  probed.memory.gb_per_s = 45.0;
  EXPECT_DOUBLE_EQ(step_roofs(probed, gguf::GgmlType::F32).cache_gb_per_s, 45.0);
}

// A step that beats its roof raises it to what the step achieved, and nothing else.
TEST(StepRoofs, AStepAboveItsRoofRaisesIt) {
  StepRoofs roofs = step_roofs(fake_roofs(1.0), gguf::GgmlType::F32);  // 40, 10 GB/s; 100 GFLOP/s
  // 1.6 GB in 0.0648 s: 24.7 GB/s from main memory, at 0.5 FLOP/byte (12.3 GFLOP/s).
  const MeasuredStep big{1'600'000'000, 0.8e9, 0.0648};
  EXPECT_TRUE(raise_roofs_to_step(roofs, big));
  EXPECT_NEAR(roofs.memory_gb_per_s, 24.69, 0.01);
  EXPECT_TRUE(roofs.memory_raised);
  EXPECT_FALSE(roofs.cache_raised);
  EXPECT_FALSE(roofs.compute_raised);
  EXPECT_DOUBLE_EQ(roofs.cache_gb_per_s, 40.0);
  EXPECT_FALSE(raise_roofs_to_step(roofs, big));  // on its roof now: nothing to raise

  // An in-cache step at 150 GFLOP/s and 30 GB/s: above the compute roof only.
  const MeasuredStep batched{3'000'000, 15e6, 1e-4};
  EXPECT_TRUE(raise_roofs_to_step(roofs, batched));
  EXPECT_DOUBLE_EQ(roofs.compute_gflop_per_s, 150.0);
  EXPECT_TRUE(roofs.compute_raised);
  EXPECT_FALSE(roofs.cache_raised);

  // Raised roofs go into the cached set, only upward.
  Roofs kept = fake_roofs(1.0);
  apply_raised_roofs(kept, roofs, gguf::GgmlType::F32, "a step of test.gguf");
  EXPECT_NEAR(kept.memory.gb_per_s, 24.69, 0.01);
  EXPECT_TRUE(kept.memory.raised_by_step);
  EXPECT_FALSE(kept.in_cache.raised_by_step);
  EXPECT_EQ(kept.memory.raised_by, "a step of test.gguf");
  EXPECT_EQ(kept.matmul[0].raised_by, "a step of test.gguf");
  EXPECT_EQ(kept.matmul[1].raised_by, "");
  EXPECT_DOUBLE_EQ(kept.matmul[0].gflop_per_s, 150.0);
  EXPECT_DOUBLE_EQ(kept.matmul[1].gflop_per_s, 100.0);  // F16: not this model's type
  EXPECT_DOUBLE_EQ(kept.in_cache.gb_per_s, 40.0);

  // An unmeasured roof stays unmeasured.
  StepRoofs unprobed;
  EXPECT_FALSE(raise_roofs_to_step(unprobed, big));
  EXPECT_EQ(unprobed.memory_gb_per_s, 0.0);
}

}  // namespace
}  // namespace servescope::compute
