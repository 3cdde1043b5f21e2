// The roofs of a roofline, measured on this machine through a backend's own kernels:
//   - read bandwidth as the matrix-vector product (decode's kernel) streams an F32 matrix, for a
//     working set that fits the last-level cache and for one well beyond it: a small model runs
//     from cache, faster than main memory allows;
//   - matrix-multiply GFLOP/s of a prefill-sized product, per weight type (F32, F16, Q8_0,
//     Q4_0): dequantising costs each type a different compute roof.
// Measured in a few seconds, then cached per device in $XDG_CACHE_HOME/servescope (or
// ~/.cache/servescope) until asked to measure afresh.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/compute/backend.h"

namespace servescope::compute {

struct BandwidthRoof {
  uint64_t working_set_bytes = 0;
  double gb_per_s = 0.0;
};

struct MatmulRoof {
  gguf::GgmlType type = gguf::GgmlType::F32;
  double gflop_per_s = 0.0;
};

struct Roofs {
  std::string backend;                  // "cpu" or "vulkan"
  std::string device;                   // the CPU's or the Vulkan device's name
  uint64_t last_level_cache_bytes = 0;  // what the working sets were sized against; 0: unknown
  BandwidthRoof in_cache;
  BandwidthRoof beyond_cache;
  // The product measured: x [tokens x cols] times W^T, W [rows x cols].
  int64_t matmul_tokens = 0;
  int64_t matmul_rows = 0;
  int64_t matmul_cols = 0;
  std::vector<MatmulRoof> matmul;  // F32, F16, Q8_0, Q4_0
};

// What to measure. default_roof_plan sizes the working sets from the last-level cache (a
// quarter of it, at most 8 MiB, in cache; four times it, at least 256 MiB and at most 512 MiB,
// beyond) or, where it is unknown (a GPU), 2 MiB and 512 MiB. (A virtual machine may report
// its host's whole last-level cache; the JSON says what the sets were sized against.)
struct RoofPlan {
  uint64_t last_level_cache_bytes = 0;
  uint64_t in_cache_bytes = 0;
  uint64_t beyond_cache_bytes = 0;
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

// The cached roofs of this backend's device (keyed by device and driver), else measured with
// default_roof_plan and cached; `fresh` measures and rewrites the cache regardless. A cache
// that cannot be written is not an error.
CachedRoofs probe_device_roofs(Backend& backend, bool fresh);

}  // namespace servescope::compute
