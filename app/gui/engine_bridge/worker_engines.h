// How the engine worker builds its engines, shared by its files (engine_worker*.cpp): the
// window's batch slots, and the window's backend and batching choices in the engine's terms.
#pragma once

#include <cstdint>

#include "app/gui/engine_bridge/engine_types.h"
#include "engine/compute/backend.h"
#include "engine/serving/scheduler.h"

namespace servescope::gui {

// The serving engine as the window runs it: the user's request and up to app::kMaxClassmates
// classmates share 16 batch slots, so a full class queues and the KV cache fills.
constexpr int64_t kMaxBatch = 16;
constexpr int64_t kAlternatives = 5;  // top alternatives reported with each generated token

// What the engine is given: a device only for Vulkan (the CPU has one), 8-bit activations only
// on the CPU (Vulkan ignores them).
inline compute::BackendChoice to_compute_choice(const BackendChoice& backend) {
  compute::BackendChoice choice = backend;
  if (backend.kind != compute::BackendKind::kVulkan) choice.device.reset();
  choice.quantised_activations =
      backend.kind == compute::BackendKind::kCpu && backend.quantised_activations;
  return choice;
}

inline serving::BatchingPolicy policy_of(const BatchingChoice& choice) {
  return choice.static_batches ? serving::BatchingPolicy::kStatic
                               : serving::BatchingPolicy::kContinuous;
}

}  // namespace servescope::gui
