// Warming a model's kernels before anything is timed. The first steps after a model loads or
// the backend changes pay one-off costs that are not the phase's speed: Vulkan pipelines are
// compiled, the CPU backend's threads and BLAS start, scratch buffers are faulted in, caches are
// cold. warm_up() runs the shapes a serving engine uses (a long prefill, single-row decode, a
// batch of short prefills and a two-row decode) once, on a throwaway engine that reports to no
// observer, so the first step a user sees is a warm one.
#pragma once

#include <cstdint>

#include "engine/model/transformer.h"
#include "engine/serving/engine.h"

namespace servescope::serving {

struct WarmUpResult {
  double wall_ms = 0.0;  // the whole warm-up
  int64_t steps = 0;     // engine steps it ran
};

// Runs the warm-up work through `transformer` with the KV type and block size of `like` (its
// KV capacity and batching are the warm-up's own). Throws what a step throws (a failed backend).
WarmUpResult warm_up(model::Transformer& transformer, uint64_t weight_bytes,
                     const EngineConfig& like);

}  // namespace servescope::serving
