#include "engine/compute/roofs.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>

#include "engine/compute/cpu_backend.h"
#include "engine/compute/devices.h"
#include "engine/compute/vulkan/device_probe.h"
#include "engine/compute/vulkan/vulkan_backend.h"

namespace servescope::compute {
namespace {

// Part of the cache file name: a changed measurement must not read an old one's numbers.
constexpr int kRoofsVersion = 3;  // 2: per thread count; 3: bandwidth runs of 20 ms or more
constexpr int kRuns = 3;
// Each timed run of the bandwidth probe streams at least this much (repeating the product on
// small working sets), so that the timer and the submission are a small part of it.
constexpr uint64_t kMinBytesPerRun = uint64_t{32} << 20;
constexpr double kMinSecondsPerRun = 0.02;
constexpr gguf::GgmlType kWeightTypes[] = {gguf::GgmlType::F32, gguf::GgmlType::F16,
                                           gguf::GgmlType::Q8_0, gguf::GgmlType::Q4_0};

vulkan::VulkanBackend* as_vulkan(Backend& backend) {
  return dynamic_cast<vulkan::VulkanBackend*>(&backend);
}

// The cache the working sets are sized against: the CPU's, for the CPU backend and for
// Vulkan devices that are the CPU (lavapipe); unknown (0) for GPUs.
uint64_t last_level_cache_of(Backend& backend) {
  const vulkan::VulkanBackend* vk = as_vulkan(backend);
  if (vk != nullptr && vk->device().type != "cpu") return 0;
  return describe_cpu().last_level_cache_bytes();
}

std::string device_name(Backend& backend) {
  if (const vulkan::VulkanBackend* vk = as_vulkan(backend)) return vk->device().name;
  return describe_cpu().model_name;
}

// The wall time of one run of `work`, ended by reading `sync` (which waits for everything
// recorded).
double seconds_of(Backend& backend, const Tensor& sync, const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  backend.read(sync);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// How many times to repeat a product that took `once` seconds so that a timed run lasts
// kMinSecondsPerRun: a cache-resident pass takes a fraction of a millisecond, and runs that
// short moved 80-180 GB/s from one probe to the next on the AMD EPYC machine (thread wake-ups
// and timer jitter, not the cache).
uint64_t repeats_for_a_run(double once) {
  return std::max<uint64_t>(
      1, static_cast<uint64_t>(std::ceil(kMinSecondsPerRun / std::max(once, 1e-9))));
}

// The best wall time of kRuns runs of `work`.
double best_seconds(Backend& backend, const Tensor& sync, const std::function<void()>& work) {
  backend.read(sync);
  double best = INFINITY;
  for (int run = 0; run < kRuns; ++run) best = std::min(best, seconds_of(backend, sync, work));
  return best;
}

BandwidthRoof measure_bandwidth(Backend& backend, uint64_t working_set_bytes) {
  constexpr int64_t kCols = 4096;  // one row: 16 KiB of F32
  const int64_t rows =
      std::max<int64_t>(1, static_cast<int64_t>(working_set_bytes / (kCols * sizeof(float))));
  const uint64_t bytes = static_cast<uint64_t>(rows * kCols) * sizeof(float);
  BandwidthRoof roof{bytes, 0.0};
  {
    const std::vector<uint8_t> zeros(bytes, 0);
    const WeightMatrix w = backend.upload_matrix(gguf::GgmlType::F32, rows, kCols, zeros);
    const Tensor x = backend.create_tensor(1, kCols, BufferPurpose::kScratch);
    Tensor y = backend.create_tensor(1, rows, BufferPurpose::kScratch);
    const auto product = [&] { backend.matmul(x, w, nullptr, y); };
    product();  // warm-up: pipelines, first touch
    const uint64_t repeats = std::max((kMinBytesPerRun + bytes - 1) / bytes,
                                      repeats_for_a_run(seconds_of(backend, y, product)));
    const double seconds = best_seconds(backend, y, [&] {
      for (uint64_t r = 0; r < repeats; ++r) product();
    });
    roof.gb_per_s = static_cast<double>(bytes * repeats) / seconds / 1e9;
  }
  return roof;
}

MatmulRoof measure_matmul(Backend& backend, gguf::GgmlType type, const RoofPlan& plan,
                          const std::vector<float>& values, const Tensor& x, Tensor& out) {
  const uint64_t row_bytes = gguf::row_bytes(type, plan.matmul_cols);
  std::vector<uint8_t> bytes(row_bytes * static_cast<uint64_t>(plan.matmul_rows));
  for (int64_t r = 0; r < plan.matmul_rows; ++r) {
    gguf::quantize_row(type, values.data() + r * plan.matmul_cols, bytes.data() + r * row_bytes,
                       plan.matmul_cols);
  }
  const WeightMatrix w = backend.upload_matrix(type, plan.matmul_rows, plan.matmul_cols, bytes);
  // The warm-up also sizes the repeats.
  const Tensor sync = out.row_range(0, 1);
  const uint64_t repeats =
      repeats_for_a_run(seconds_of(backend, sync, [&] { backend.matmul(x, w, nullptr, out); }));
  const double seconds = best_seconds(backend, sync, [&] {
    for (uint64_t r = 0; r < repeats; ++r) backend.matmul(x, w, nullptr, out);
  });
  const double flops = 2.0 * static_cast<double>(plan.matmul_tokens * plan.matmul_rows) *
                       static_cast<double>(plan.matmul_cols) * static_cast<double>(repeats);
  return {type, flops / seconds / 1e9};
}

// --- cache ----------------------------------------------------------------------------------

std::string file_safe(const std::string& text) {
  std::string out;
  for (const char c : text) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

}  // namespace

std::optional<std::filesystem::path> roofs_cache_file(Backend& backend) {
  const auto dir = vulkan::cache_directory();
  if (!dir) return std::nullopt;
  std::string key;
  if (const vulkan::VulkanBackend* vk = as_vulkan(backend)) {
    key = "vulkan-" + vulkan::hex_uuid(vk->device()) + "-" +
          std::to_string(vk->device().driver_version);
  } else {
    const CpuDescription cpu = describe_cpu();
    const auto* threaded = dynamic_cast<const CpuBackend*>(&backend);
    key = "cpu-" + file_safe(cpu.model_name) + "-" + std::to_string(cpu.cores) + "-" +
          std::to_string(cpu.last_level_cache_bytes()) + "-threads" +
          std::to_string(threaded != nullptr ? threaded->threads() : 1);
    // 8-bit activations multiply Q8_0 and Q4_0 on other kernels: other compute roofs.
    if (threaded != nullptr && threaded->quantised_activations()) key += "-q8act";
  }
  return *dir / ("roofs-v" + std::to_string(kRoofsVersion) + "-" + key + ".txt");
}

namespace {

std::string type_key(gguf::GgmlType type) {
  std::string name(gguf::type_name(type));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return "matmul_" + name + "_gflop_per_s";
}

void write_cache(const std::filesystem::path& file, const Roofs& r) {
  std::error_code ignored;
  std::filesystem::create_directories(file.parent_path(), ignored);
  std::ofstream out(file);
  out.precision(17);
  out << "backend " << r.backend << "\ndevice " << r.device << "\nlast_level_cache_bytes "
      << r.last_level_cache_bytes << "\nin_cache_bytes " << r.in_cache.working_set_bytes
      << "\nin_cache_gb_per_s " << r.in_cache.gb_per_s << "\nbeyond_cache_bytes "
      << r.beyond_cache.working_set_bytes << "\nbeyond_cache_gb_per_s " << r.beyond_cache.gb_per_s
      << "\nmatmul_tokens " << r.matmul_tokens << "\nmatmul_rows " << r.matmul_rows
      << "\nmatmul_cols " << r.matmul_cols << "\n";
  for (const MatmulRoof& m : r.matmul) out << type_key(m.type) << " " << m.gflop_per_s << "\n";
}

std::optional<Roofs> read_cache(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::map<std::string, std::string> entries;
  for (std::string line; std::getline(in, line);) {
    const size_t space = line.find(' ');
    if (space != std::string::npos) entries[line.substr(0, space)] = line.substr(space + 1);
  }
  try {
    Roofs r;
    r.backend = entries.at("backend");
    r.device = entries.at("device");
    r.last_level_cache_bytes = std::stoull(entries.at("last_level_cache_bytes"));
    r.in_cache = {std::stoull(entries.at("in_cache_bytes")),
                  std::stod(entries.at("in_cache_gb_per_s"))};
    r.beyond_cache = {std::stoull(entries.at("beyond_cache_bytes")),
                      std::stod(entries.at("beyond_cache_gb_per_s"))};
    r.matmul_tokens = std::stoll(entries.at("matmul_tokens"));
    r.matmul_rows = std::stoll(entries.at("matmul_rows"));
    r.matmul_cols = std::stoll(entries.at("matmul_cols"));
    for (const gguf::GgmlType type : kWeightTypes) {
      r.matmul.push_back({type, std::stod(entries.at(type_key(type)))});
    }
    const bool positive = r.in_cache.gb_per_s > 0.0 && r.beyond_cache.gb_per_s > 0.0 &&
                          std::all_of(r.matmul.begin(), r.matmul.end(),
                                      [](const MatmulRoof& m) { return m.gflop_per_s > 0.0; });
    if (!positive) return std::nullopt;
    return r;
  } catch (const std::exception&) {  // missing or malformed: measure again
    return std::nullopt;
  }
}

}  // namespace

RoofPlan default_roof_plan(Backend& backend) {
  RoofPlan plan;
  plan.last_level_cache_bytes = last_level_cache_of(backend);
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  if (plan.last_level_cache_bytes > 0) {
    plan.in_cache_bytes =
        std::clamp(plan.last_level_cache_bytes / 4, 256 * uint64_t{1024}, 8 * kMiB);
    plan.beyond_cache_bytes = std::clamp(4 * plan.last_level_cache_bytes, 256 * kMiB, 512 * kMiB);
  } else {
    plan.in_cache_bytes = 2 * kMiB;
    plan.beyond_cache_bytes = 512 * kMiB;
  }
  return plan;
}

Roofs measure_roofs(Backend& backend, const RoofPlan& plan) {
  Roofs roofs;
  roofs.backend = backend.name();
  roofs.device = device_name(backend);
  roofs.last_level_cache_bytes = plan.last_level_cache_bytes;
  roofs.in_cache = measure_bandwidth(backend, plan.in_cache_bytes);
  roofs.beyond_cache = measure_bandwidth(backend, plan.beyond_cache_bytes);

  roofs.matmul_tokens = plan.matmul_tokens;
  roofs.matmul_rows = plan.matmul_rows;
  roofs.matmul_cols = plan.matmul_cols;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> values(static_cast<size_t>(plan.matmul_rows * plan.matmul_cols));
  for (float& v : values) v = normal(rng);
  std::vector<float> x_values(static_cast<size_t>(plan.matmul_tokens * plan.matmul_cols));
  for (float& v : x_values) v = normal(rng);
  Tensor x = backend.create_tensor(plan.matmul_tokens, plan.matmul_cols, BufferPurpose::kScratch);
  backend.write(x, x_values);
  Tensor out = backend.create_tensor(plan.matmul_tokens, plan.matmul_rows, BufferPurpose::kScratch);
  for (const gguf::GgmlType type : kWeightTypes) {
    roofs.matmul.push_back(measure_matmul(backend, type, plan, values, x, out));
  }
  return roofs;
}

CachedRoofs probe_device_roofs(Backend& backend, bool fresh) {
  CachedRoofs result;
  const auto file = roofs_cache_file(backend);
  if (file) {
    result.cache_file = *file;
    if (!fresh) {
      if (const auto cached = read_cache(*file)) {
        result.roofs = *cached;
        result.from_cache = true;
        return result;
      }
    }
  }
  result.roofs = measure_roofs(backend, default_roof_plan(backend));
  if (file) write_cache(*file, result.roofs);
  return result;
}

}  // namespace servescope::compute
