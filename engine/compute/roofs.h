// The roofs of a roofline, measured on this machine through a backend's own kernels:
//   - read bandwidth as the matrix-vector product (decode's kernel) streams an F32 matrix, for a
//     working set that fits the last-level cache and for one well beyond it: a small model runs
//     from cache, faster than main memory allows;
//   - matrix-multiply GFLOP/s of a prefill-sized product, per weight type (F32, F16, Q8_0,
//     Q4_0): dequantising costs each type a different compute roof.
// A roof is the best this device did, not one sample: each figure is the best of repeats that
// agree (a busy machine slows some runs, never speeds one up), a probe taken while other work
// ran is taken again on the next probe, and the roofs cached per device (in
// $XDG_CACHE_HOME/servescope or ~/.cache/servescope) only ever go up: each probe keeps the
// higher of what it measured and what was cached, and a measured step that beats a roof raises
// it (raise_roofs_to_step, persist_raised_roofs).
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/compute/backend.h"

namespace servescope::compute {

struct BandwidthRoof {
  uint64_t working_set_bytes = 0;
  double gb_per_s = 0.0;
  bool raised_by_step = false;  // a measured step beat the probe: the figure is the step's
  // Which step ("a step of stories.gguf on 2026-12-06"), for a reader who loaded another model
  // since; empty when not raised or not said (a cache file written before it was kept).
  std::string raised_by{};
};

struct MatmulRoof {
  gguf::GgmlType type = gguf::GgmlType::F32;
  double gflop_per_s = 0.0;
  bool raised_by_step = false;
  std::string raised_by{};
};

struct Roofs {
  std::string backend;                  // "cpu" or "vulkan"
  std::string device;                   // the CPU's or the Vulkan device's name
  uint64_t last_level_cache_bytes = 0;  // what the working sets were sized against; 0: unknown
  BandwidthRoof in_cache;
  // Main memory's streaming bandwidth (the cache file and `probe`'s JSON keep its first name,
  // "beyond_cache").
  BandwidthRoof memory;
  // The product measured: x [tokens x cols] times W^T, W [rows x cols].
  int64_t matmul_tokens = 0;
  int64_t matmul_rows = 0;
  int64_t matmul_cols = 0;
  std::vector<MatmulRoof> matmul;  // F32, F16, Q8_0, Q4_0
  // Other work was running while these were measured (busy_machine()): the next probe
  // measures again and keeps the higher figures.
  bool measured_busy = false;
};

// The best of a figure's timed runs: at least kMinRuns, more while the two fastest differ by
// more than kSteadySpread, so that a run slowed by other work is outrun; at most kMaxRuns runs
// or, past kMinRuns, kMaxSecondsPerFigure of runs (a slow device's runs are long).
struct BestRun {
  double seconds = 0.0;  // the fastest run
  int runs = 0;
  double spread = 0.0;  // (second fastest - fastest) / fastest
};
inline constexpr int kMinRuns = 3;
inline constexpr int kMaxRuns = 9;
inline constexpr double kSteadySpread = 0.03;
inline constexpr double kMaxSecondsPerFigure = 2.0;
// `time_one_run` runs the work once and returns its wall time in seconds.
BestRun best_of_runs(const std::function<double()>& time_one_run);

// Whether other work is running: sampled a few times from /proc/loadavg's runnable count, busy
// when more than this process's own thread was runnable in every sample (a busy loop on one
// core is); false where /proc/loadavg cannot be read.
bool busy_machine();

// The higher of two probes' figures, roof by roof (the later one's working sets and shape);
// busy only when both were measured busy.
Roofs higher_roofs(const Roofs& kept, const Roofs& measured);

// What to measure. default_roof_plan sizes the working sets from the last-level cache (a
// quarter of it, at most 8 MiB, in cache; four times it, at least 256 MiB and at most 512 MiB,
// beyond) or, where it is unknown (a GPU), 2 MiB and 512 MiB. (A virtual machine may report
// its host's whole last-level cache; the JSON says what the sets were sized against.)
struct RoofPlan {
  uint64_t last_level_cache_bytes = 0;
  uint64_t in_cache_bytes = 0;
  uint64_t memory_bytes = 0;
  int64_t matmul_tokens = 128;
  int64_t matmul_rows = 1024;
  int64_t matmul_cols = 2048;
};
RoofPlan default_roof_plan(Backend& backend);

// Measures now (each figure the best of a few timed runs).
Roofs measure_roofs(Backend& backend, const RoofPlan& plan);

struct CachedRoofs {
  Roofs roofs;
  bool from_cache = false;
  std::filesystem::path cache_file;  // empty when no cache directory is known
};

// Where the roofs of this backend are cached: one file per device (and driver), per CPU thread
// count and activations mode (8-bit activations have other Q8_0 / Q4_0 compute roofs); none
// when no cache directory is known.
std::optional<std::filesystem::path> roofs_cache_file(Backend& backend);

struct ProbeOptions {
  bool fresh = false;  // measure even when the cache holds roofs
  std::function<bool()> machine_busy = busy_machine;
  std::function<Roofs(Backend&)> measure = [](Backend& backend) {
    return measure_roofs(backend, default_roof_plan(backend));
  };
};

// The cached roofs of this backend's device (keyed by device, driver, threads and activations)
// unless they were measured busy and the machine is quiet now; else measured now (with
// default_roof_plan) and cached as the higher of the new and the cached figures, so that cached
// roofs only ever go up (until kRoofsVersion changes). `fresh` measures regardless. A cache
// that cannot be written is not an error.
CachedRoofs probe_device_roofs(Backend& backend, const ProbeOptions& options);
CachedRoofs probe_device_roofs(Backend& backend, bool fresh);

// --- roofs against measured steps -------------------------------------------------------------

// The three roofs a measured step is judged against, for one weight type (the model's main one),
// and which of them a measured step raised.
struct StepRoofs {
  double cache_gb_per_s = 0.0;
  double memory_gb_per_s = 0.0;
  double compute_gflop_per_s = 0.0;
  // Working sets up to this many bytes are judged against the cache roof: the last-level cache,
  // or where it is unknown (a GPU) the probe's in-cache working set.
  uint64_t cache_bytes = 0;
  bool cache_raised = false;
  bool memory_raised = false;
  bool compute_raised = false;
  // Which step raised each (BandwidthRoof::raised_by); empty when not said.
  std::string cache_raised_by{};
  std::string memory_raised_by{};
  std::string compute_raised_by{};
};
// The type most of a model's matrices are stored in (tensor_types: type name -> tensors, as
// model::WeightSummary counts them) when the probe measures it: its compute roof is the model's.
std::optional<gguf::GgmlType> main_probed_type(const Roofs& roofs,
                                               const std::map<std::string, int64_t>& tensor_types);
// No compute roof (0) when `weight_type` is none or was not measured.
StepRoofs step_roofs(const Roofs& roofs, std::optional<gguf::GgmlType> weight_type);

enum class BandwidthRoofKind { kCache, kMemory };
// The bandwidth roof a step belongs to: its working set (the bytes it reads and writes: weights
// and KV) decides: the cache roof when it fits cache_bytes, else main memory's.
BandwidthRoofKind bandwidth_roof_for(const StepRoofs& roofs, uint64_t working_set_bytes);

// What one step moved and did in its measured wall time.
struct MeasuredStep {
  uint64_t bytes = 0;  // weights and KV read and written: also its working set
  double flops = 0.0;
  double seconds = 0.0;
};
// Raises the roofs this step beat to what it achieved (its GB/s for its bandwidth roof, its
// GFLOP/s for the compute roof), so that it sits on or under them; true when any was raised.
// A roof that was not measured (0) stays unmeasured.
bool raise_roofs_to_step(StepRoofs& roofs, const MeasuredStep& step);

// Writes roofs raised by measured steps into `roofs` (the weight type's compute roof, the two
// bandwidth roofs), only ever upward; `raised_by` says which step each raised one came from.
void apply_raised_roofs(Roofs& roofs, const StepRoofs& raised,
                        std::optional<gguf::GgmlType> weight_type, const std::string& raised_by);
// Keeps raised roofs in this backend's cache file (the higher of the file's and these); false
// when there is no cache file to write.
bool persist_raised_roofs(Backend& backend, const Roofs& roofs);

}  // namespace servescope::compute
