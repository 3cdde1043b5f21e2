#include "engine/compute/roofs.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <thread>

#include "engine/compute/cpu_backend.h"
#include "engine/compute/devices.h"
#include "engine/compute/vulkan/device_probe.h"
#include "engine/compute/vulkan/vulkan_backend.h"

namespace servescope::compute {
namespace {

// Part of the cache file name: a changed measurement must not read an old one's numbers.
// 2: per thread count; 3: bandwidth runs of 20 ms or more; 4: best of steady repeats, kept
// highest across probes, raised by measured steps.
constexpr int kRoofsVersion = 4;
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

// The best wall time of steady runs of `work` (best_of_runs).
double best_seconds(Backend& backend, const Tensor& sync, const std::function<void()>& work) {
  backend.read(sync);
  return best_of_runs([&] { return seconds_of(backend, sync, work); }).seconds;
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

BestRun best_of_runs(const std::function<double()>& time_one_run) {
  double fastest = INFINITY;
  double second = INFINITY;
  BestRun best;
  double total = 0.0;
  while (best.runs < kMaxRuns) {
    const double seconds = time_one_run();
    ++best.runs;
    total += seconds;
    if (seconds < fastest) {
      second = fastest;
      fastest = seconds;
    } else {
      second = std::min(second, seconds);
    }
    best.seconds = fastest;
    best.spread = std::isfinite(second) ? (second - fastest) / fastest : 0.0;
    if (best.runs >= kMinRuns && (best.spread <= kSteadySpread || total >= kMaxSecondsPerFigure)) {
      break;
    }
  }
  return best;
}

bool busy_machine() {
  // /proc/loadavg: "0.52 0.31 0.20 2/215 1234": the fourth field is runnable/total now. The
  // 1-minute average lags a busy loop by a minute; the runnable count does not, but it blinks,
  // so other work counts only when it shows in every sample.
  constexpr int kSamples = 5;
  int fewest_others = std::numeric_limits<int>::max();
  for (int sample = 0; sample < kSamples; ++sample) {
    std::ifstream in("/proc/loadavg");
    double one_minute = 0.0;
    double five_minutes = 0.0;
    double fifteen_minutes = 0.0;
    int runnable = 0;
    if (!(in >> one_minute >> five_minutes >> fifteen_minutes >> runnable)) return false;
    fewest_others = std::min(fewest_others, runnable - 1);  // this thread is runnable
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return fewest_others > 0;
}

namespace {

// `roof` keeps the kept figure (and where it came from) when that is higher.
void keep_higher(BandwidthRoof& roof, const BandwidthRoof& kept) {
  if (kept.gb_per_s <= roof.gb_per_s) return;
  roof.gb_per_s = kept.gb_per_s;
  roof.raised_by_step = kept.raised_by_step;
  roof.raised_by = kept.raised_by;
}

void keep_higher(MatmulRoof& roof, const MatmulRoof& kept) {
  if (kept.type != roof.type || kept.gflop_per_s <= roof.gflop_per_s) return;
  roof.gflop_per_s = kept.gflop_per_s;
  roof.raised_by_step = kept.raised_by_step;
  roof.raised_by = kept.raised_by;
}

}  // namespace

Roofs higher_roofs(const Roofs& kept, const Roofs& measured) {
  Roofs higher = measured;
  keep_higher(higher.in_cache, kept.in_cache);
  keep_higher(higher.memory, kept.memory);
  for (MatmulRoof& roof : higher.matmul) {
    for (const MatmulRoof& old : kept.matmul) keep_higher(roof, old);
  }
  higher.measured_busy = kept.measured_busy && measured.measured_busy;
  return higher;
}

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

std::string raised_key(const std::string& roof_key) { return roof_key + "_raised_by_step"; }
std::string raised_by_key(const std::string& roof_key) { return roof_key + "_raised_by"; }

void write_roofs(std::ostream& out, const Roofs& r) {
  out.precision(17);
  out << "backend " << r.backend << "\ndevice " << r.device << "\nlast_level_cache_bytes "
      << r.last_level_cache_bytes << "\nin_cache_bytes " << r.in_cache.working_set_bytes
      << "\nin_cache_gb_per_s " << r.in_cache.gb_per_s << "\nbeyond_cache_bytes "
      << r.memory.working_set_bytes << "\nbeyond_cache_gb_per_s " << r.memory.gb_per_s
      << "\nmatmul_tokens " << r.matmul_tokens << "\nmatmul_rows " << r.matmul_rows
      << "\nmatmul_cols " << r.matmul_cols << "\nmeasured_busy " << r.measured_busy << "\n";
  for (const MatmulRoof& m : r.matmul) out << type_key(m.type) << " " << m.gflop_per_s << "\n";
  out << raised_key("in_cache") << " " << r.in_cache.raised_by_step << "\n"
      << raised_key("beyond_cache") << " " << r.memory.raised_by_step << "\n";
  for (const MatmulRoof& m : r.matmul) {
    out << raised_key(type_key(m.type)) << " " << m.raised_by_step << "\n";
  }
  // One line each: a line break in a model's file name would end the entry early.
  const auto said = [&](const std::string& key, std::string text) {
    std::replace(text.begin(), text.end(), '\n', ' ');
    if (!text.empty()) out << raised_by_key(key) << " " << text << "\n";
  };
  said("in_cache", r.in_cache.raised_by);
  said("beyond_cache", r.memory.raised_by);
  for (const MatmulRoof& m : r.matmul) said(type_key(m.type), m.raised_by);
}

// Written beside the file and renamed over it: a window raising its roofs and a probe reading
// them at the same time never see half a file.
void write_cache(const std::filesystem::path& file, const Roofs& r) {
  std::error_code ignored;
  std::filesystem::create_directories(file.parent_path(), ignored);
  std::filesystem::path partial = file;
  partial += ".partial-" + std::to_string(getpid()) + "-" +
             std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(partial);
    write_roofs(out, r);
  }
  std::filesystem::rename(partial, file, ignored);
  if (ignored) std::filesystem::remove(partial, ignored);
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
    r.memory = {std::stoull(entries.at("beyond_cache_bytes")),
                std::stod(entries.at("beyond_cache_gb_per_s"))};
    r.matmul_tokens = std::stoll(entries.at("matmul_tokens"));
    r.matmul_rows = std::stoll(entries.at("matmul_rows"));
    r.matmul_cols = std::stoll(entries.at("matmul_cols"));
    r.measured_busy = entries.at("measured_busy") != "0";
    const auto raised = [&](const std::string& key) { return entries.at(raised_key(key)) != "0"; };
    const auto raised_by = [&](const std::string& key) {  // optional: older files lack it
      const auto it = entries.find(raised_by_key(key));
      return it == entries.end() ? std::string() : it->second;
    };
    r.in_cache.raised_by_step = raised("in_cache");
    r.in_cache.raised_by = raised_by("in_cache");
    r.memory.raised_by_step = raised("beyond_cache");
    r.memory.raised_by = raised_by("beyond_cache");
    for (const gguf::GgmlType type : kWeightTypes) {
      r.matmul.push_back({type, std::stod(entries.at(type_key(type))), raised(type_key(type)),
                          raised_by(type_key(type))});
    }
    const bool positive = r.in_cache.gb_per_s > 0.0 && r.memory.gb_per_s > 0.0 &&
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
    plan.memory_bytes = std::clamp(4 * plan.last_level_cache_bytes, 256 * kMiB, 512 * kMiB);
  } else {
    plan.in_cache_bytes = 2 * kMiB;
    plan.memory_bytes = 512 * kMiB;
  }
  return plan;
}

Roofs measure_roofs(Backend& backend, const RoofPlan& plan) {
  Roofs roofs;
  roofs.backend = backend.name();
  roofs.device = device_name(backend);
  roofs.last_level_cache_bytes = plan.last_level_cache_bytes;
  roofs.in_cache = measure_bandwidth(backend, plan.in_cache_bytes);
  roofs.memory = measure_bandwidth(backend, plan.memory_bytes);

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

CachedRoofs probe_device_roofs(Backend& backend, const ProbeOptions& options) {
  CachedRoofs result;
  const auto file = roofs_cache_file(backend);
  const std::optional<Roofs> cached = file ? read_cache(*file) : std::nullopt;
  if (file) result.cache_file = *file;
  // Roofs measured busy are measured again once the machine is quiet: measuring while it is
  // still busy would not do better.
  const bool busy_now =
      (!cached || cached->measured_busy || options.fresh) && options.machine_busy();
  if (cached && !options.fresh && (!cached->measured_busy || busy_now)) {
    result.roofs = *cached;
    result.from_cache = true;
    return result;
  }
  Roofs measured = options.measure(backend);
  measured.measured_busy = busy_now || options.machine_busy();
  result.roofs = cached ? higher_roofs(*cached, measured) : measured;
  if (file) write_cache(*file, result.roofs);
  return result;
}

CachedRoofs probe_device_roofs(Backend& backend, bool fresh) {
  ProbeOptions options;
  options.fresh = fresh;
  return probe_device_roofs(backend, options);
}

// --- roofs against measured steps -------------------------------------------------------------

std::optional<gguf::GgmlType> main_probed_type(const Roofs& roofs,
                                               const std::map<std::string, int64_t>& tensor_types) {
  std::string main_type;
  int64_t most = 0;
  for (const auto& [type, count] : tensor_types) {
    if (count > most) most = count, main_type = type;
  }
  for (const MatmulRoof& roof : roofs.matmul) {
    if (gguf::type_name(roof.type) == main_type) return roof.type;
  }
  return std::nullopt;
}

StepRoofs step_roofs(const Roofs& roofs, std::optional<gguf::GgmlType> weight_type) {
  StepRoofs s;
  s.cache_gb_per_s = roofs.in_cache.gb_per_s;
  s.cache_raised = roofs.in_cache.raised_by_step;
  s.cache_raised_by = roofs.in_cache.raised_by;
  s.memory_gb_per_s = roofs.memory.gb_per_s;
  s.memory_raised = roofs.memory.raised_by_step;
  s.memory_raised_by = roofs.memory.raised_by;
  for (const MatmulRoof& m : roofs.matmul) {
    if (!weight_type || m.type != *weight_type) continue;
    s.compute_gflop_per_s = m.gflop_per_s;
    s.compute_raised = m.raised_by_step;
    s.compute_raised_by = m.raised_by;
  }
  s.cache_bytes = roofs.last_level_cache_bytes > 0 ? roofs.last_level_cache_bytes
                                                   : roofs.in_cache.working_set_bytes;
  if (s.memory_gb_per_s > s.cache_gb_per_s) {  // as raise_roofs_to_step keeps them
    s.cache_gb_per_s = s.memory_gb_per_s;
    s.cache_raised = s.memory_raised;
    s.cache_raised_by = s.memory_raised_by;
  }
  return s;
}

BandwidthRoofKind bandwidth_roof_for(const StepRoofs& roofs, uint64_t working_set_bytes) {
  return working_set_bytes <= roofs.cache_bytes ? BandwidthRoofKind::kCache
                                                : BandwidthRoofKind::kMemory;
}

namespace {

// Raises a measured roof to `achieved` when it is below; true when it was.
bool raise(double& roof, bool& raised, double achieved) {
  if (roof <= 0.0 || !(achieved > roof)) return false;
  roof = achieved;
  raised = true;
  return true;
}

}  // namespace

bool raise_roofs_to_step(StepRoofs& roofs, const MeasuredStep& step) {
  if (step.seconds <= 0.0 || step.bytes == 0) return false;
  const double gb_per_s = static_cast<double>(step.bytes) / step.seconds / 1e9;
  const double gflop_per_s = step.flops / step.seconds / 1e9;
  const bool cache = bandwidth_roof_for(roofs, step.bytes) == BandwidthRoofKind::kCache;
  const bool bandwidth = cache ? raise(roofs.cache_gb_per_s, roofs.cache_raised, gb_per_s)
                               : raise(roofs.memory_gb_per_s, roofs.memory_raised, gb_per_s);
  // What main memory delivered passed through the cache: a cache roof below it would put the
  // memory ridge left of the cache's (a lecturer saw 45.1 GB/s from memory, 38.6 from cache).
  const bool cache_follows =
      !cache && raise(roofs.cache_gb_per_s, roofs.cache_raised, roofs.memory_gb_per_s);
  const bool compute = raise(roofs.compute_gflop_per_s, roofs.compute_raised, gflop_per_s);
  return bandwidth || cache_follows || compute;
}

void apply_raised_roofs(Roofs& roofs, const StepRoofs& raised,
                        std::optional<gguf::GgmlType> weight_type, const std::string& raised_by) {
  keep_higher(roofs.in_cache, {0, raised.cache_gb_per_s, raised.cache_raised, raised_by});
  keep_higher(roofs.memory, {0, raised.memory_gb_per_s, raised.memory_raised, raised_by});
  if (!weight_type) return;
  for (MatmulRoof& m : roofs.matmul) {
    keep_higher(m, {*weight_type, raised.compute_gflop_per_s, raised.compute_raised, raised_by});
  }
}

bool persist_raised_roofs(Backend& backend, const Roofs& roofs) {
  const auto file = roofs_cache_file(backend);
  if (!file) return false;
  const std::optional<Roofs> cached = read_cache(*file);
  write_cache(*file, cached ? higher_roofs(*cached, roofs) : roofs);
  return true;
}

}  // namespace servescope::compute
