// Each request's life on the engine clock, rebuilt from the engine's records as they arrive:
// when it waited in the queue, ran its prompt (chunk by chunk), decoded, lost its KV blocks to
// a preemption and recomputed them. The Timeline panel draws it. Its stretches follow one
// another with no gap, so they add up to the request's recorded times: the queued stretch is
// its queue time (metrics.h), and all of them together run from arrival to finished_ms.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "engine/telemetry/records.h"

namespace servescope::telemetry {

enum class LifeStage {
  kQueued,     // arrived, no step has run any of its tokens yet
  kPrefill,    // a chunk of its prompt
  kDecode,     // generating, one token a step
  kPreempted,  // lost its KV blocks; waiting to be run again
  kRecompute,  // its prompt and earlier outputs again, after a preemption
};

// One stretch of a life: [start_ms, end_ms) in one stage. A step's work runs until the next step
// that changes the request's stage starts (the time between steps belongs to the stretch before),
// so stretches meet end to start.
struct LifeStretch {
  LifeStage stage = LifeStage::kQueued;
  double start_ms = 0.0;
  double end_ms = 0.0;
  int64_t steps = 0;   // engine steps in it (0 for a wait)
  int64_t tokens = 0;  // tokens those steps processed for it: a chunk's size; one per decode step
};

struct RequestLife {
  int64_t request_id = 0;
  // Arrival, first scheduled and token times, as RequestRecord defines them: the engine's own
  // record once the request finished; until then token times are the ends of the steps that
  // made them.
  RequestRecord record;
  std::vector<LifeStretch> stretches;  // in time order, each starting where the last ended
  bool finished = false;
  // false when it was first seen in a step, its arrival not yet known (a recording without
  // arrivals): its queued stretch appears when it finishes.
  bool arrival_known = false;
};

class RequestTimeline {
 public:
  // kept: the most lives remembered; the oldest finished ones go first.
  explicit RequestTimeline(size_t kept = 256) : kept_(kept) {}

  // Feed the records in the order the engine emitted them.
  void on_arrival(const RequestArrival& arrival);
  void on_step(const StepRecord& step);
  void on_request(const RequestRecord& request);
  // A sample of a prompt another request computed took its first token from that request's
  // logits and joined the running batch at fork_ms (the pool's KvEventKind::kFork): its wait
  // ends and its decode begins there, with its first token.
  void on_fork(int64_t request, double fork_ms);

  // The `newest` lives kept with the highest request ids (all by default), by request id,
  // valid until the next record; a running one's last stretch ends at now_ms().
  std::vector<const RequestLife*> lives(size_t newest = SIZE_MAX) const;
  // The latest engine time the records showed (a step's end, an arrival, a finish).
  double now_ms() const { return now_ms_; }
  bool empty() const { return lives_.empty(); }

 private:
  RequestLife& life(int64_t request, double first_seen_ms);
  // Ends the open stretch where `next` starts, and opens `next`.
  static void begin(RequestLife& life, LifeStretch next);
  void forget_oldest_finished();
  // Moves the clock to `ms` (if later) and the running lives' last stretches with it.
  void advance(double ms);

  size_t kept_;
  std::map<int64_t, RequestLife> lives_;
  std::set<int64_t> running_;  // the lives not finished: their last stretch ends at now_ms_
  double now_ms_ = 0.0;
};

}  // namespace servescope::telemetry
