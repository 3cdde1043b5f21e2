// Limits the window, lecture mode, the lessons and the command line share, each said once.
#pragma once

#include <cstdint>

namespace servescope::app {

// Simulated classmates beside the user's request: the window's spin box, lecture mode's C key,
// a lesson's set_classmates and `servescope --demo --clients`.
inline constexpr int kMaxClassmates = 32;
// Tokens one generation may ask for: the window's Max tokens box and a lesson's generate.
inline constexpr int kMaxTokens = 4096;
// A static batch's longest wait: the window's Batch wait box and a lesson's set_batch_wait.
inline constexpr int kMaxBatchWaitMs = 10000;
// Samples of the user's prompt one Generate runs (they share its KV blocks): the window's
// Samples box; no more than the engine's batch slots, so that all of them decode together.
inline constexpr int kMaxSamples = 8;

}  // namespace servescope::app
