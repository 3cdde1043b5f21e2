// Synthetic but realistic panel snapshots, shaped like what the engine measures on the small
// default model, for widget tests and for rendering the panels to look at them.
#pragma once

#include <memory>

#include "widgets/batching_panel.h"
#include "widgets/kv_cache_panel.h"
#include "widgets/phases_panel.h"
#include "widgets/timeline_panel.h"

namespace servescope::widgets::testing {

// A new panel of type Panel showing `snapshot`.
template <typename Panel, typename Snapshot>
std::unique_ptr<PanelView> panel_with(const Snapshot& snapshot) {
  auto panel = std::make_unique<Panel>();
  panel->set_snapshot(snapshot);
  return panel;
}

// A 160-token prompt prefilled in one step, then a second request joining (a mixed step), then
// decode steps (90 of them with both requests, or `shared_decode_steps`) whose attention time
// grows with the context while matmul time stays flat.
PhasesSnapshot synthetic_phases(bool kernels_measured, int shared_decode_steps = 90);

// The default model's KV shape (5 layers, 2 KV heads, head dim 64, F32: 5,120 bytes per token)
// with four requests in a pool of 64 blocks of 16 tokens; requests 1-3 share a 32-token prefix.
// History, per-layer bytes and the block grid all follow from the same simulated requests.
KvCacheSnapshot synthetic_kv_cache();
// What a class sees: twelve requests (140-151), eight sharing the prefix, in 128 blocks.
KvCacheSnapshot synthetic_kv_cache_class();

// Continuous batching over 4 slots for 80 steps: 9 requests arrive over time, one is preempted
// at step 40 and recomputed later; latencies follow from the same simulated step times. The
// sweep (when asked for) is a decode step costing 4.5 ms + 0.35 ms per sequence.
BatchingSnapshot synthetic_batching(bool with_sweep);
// What a class sees: 16 slots, 36 requests (127-162) over 180 steps, one preempted at step 90.
BatchingSnapshot synthetic_batching_class(bool with_sweep);

// `requests` lives 40 ms apart on continuous batching: every fourth queues 150 ms for a slot,
// prompts of 20-69 tokens in chunks of 32, request 4 preempted and recomputed, request 2 the
// user's; the newest two still running.
TimelineSnapshot synthetic_timeline(int requests = 10);

}  // namespace servescope::widgets::testing
