// Folds the engine's telemetry records, as the GUI thread drains them from the TelemetryQueue,
// into the state the panels draw: the recent steps and finished requests, the KV block pool
// rebuilt from its events, counters, and which panels have something new. Plain C++ (no Qt)
// so a test can feed it synthetic records.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <vector>

#include "engine/serving/kv_reservation.h"
#include "engine/telemetry/observer.h"
#include "engine/telemetry/request_timeline.h"

namespace servescope::gui {

// What the folder must know of the engine whose records it folds.
struct FoldFacts {
  int64_t kv_blocks_total = 0;
  int64_t block_size = 16;
  uint64_t kv_bytes_per_block = 0;
};

// One KV block as the events left it.
struct FoldedBlock {
  int32_t ref_count = 0;       // block tables holding it; 0: free
  int64_t owner = -1;          // the sequence that last took it; kept after it is freed
  int64_t fill = 0;            // slots holding valid keys and values
  bool prefix_shared = false;  // found in the prefix cache by a later sequence
  bool cached_prefix = false;  // indexed in the prefix cache (reusable by a later prompt)
  std::optional<telemetry::KvEventKind> last_event;
  double last_event_ms = 0.0;  // the consumer's clock when that event was folded
};

// KV bytes allocated against the tokens whose keys and values are held, after a step.
struct KvFillPoint {
  int64_t step_index = 0;
  int64_t retained_tokens = 0;
  uint64_t allocated_bytes = 0;
};

// One sequence's share of the KV cache, from its events: tokens whose keys and values were
// written (or shared from the prefix cache) and the blocks in its table.
struct SequenceKv {
  int64_t tokens_written = 0;
  int64_t blocks = 0;
  bool released = false;  // freed or preempted: the figures are those it held last
};

struct FoldCounts {
  int64_t steps = 0;
  int64_t requests = 0;  // finished requests
  int64_t kv_events = 0;
  std::array<int64_t, telemetry::kKvEventKinds> kv_events_by_kind{};  // by KvEventKind
  int64_t tokens = 0;                          // TokenRecords (requests that asked for them)
  int64_t prefill_tokens = 0;
  int64_t decode_tokens = 0;
  int64_t inconsistent_kv_events = 0;  // events whose occupancy disagrees with the replay
};

// Counters of what the folder took in; a reset counts too (everything is new again).
struct FoldRevisions {
  uint64_t resets = 0;
  uint64_t steps = 0;
  uint64_t requests = 0;
  uint64_t kv_events = 0;
  uint64_t arrivals = 0;
};

class TelemetryFolder {
 public:
  // history: the most recent steps, requests and KV events kept for the panels.
  explicit TelemetryFolder(size_t history = 512);

  // Starts over for a new engine.
  void reset(const FoldFacts& facts);

  // now_ms: the consumer's clock when the records were drained (for tokens per second).
  void fold(std::span<const telemetry::TelemetryItem> items, double now_ms);

  const FoldFacts& facts() const { return facts_; }
  const FoldCounts& counts() const { return counts_; }
  const std::deque<telemetry::StepRecord>& steps() const { return steps_; }
  const std::deque<telemetry::RequestRecord>& requests() const { return requests_; }
  const std::deque<telemetry::KvEvent>& kv_events() const { return kv_events_; }
  const std::vector<FoldedBlock>& blocks() const { return blocks_; }
  // Each request's life (queued, prefill chunks, decode, preempted, recompute), kept for the
  // `history` most recent requests.
  const telemetry::RequestTimeline& timeline() const { return timeline_; }
  const std::deque<KvFillPoint>& kv_fill() const { return kv_fill_; }
  // Tokens written into the blocks in use now, a block shared by several sequences once.
  int64_t retained_tokens() const;
  // The sequences holding blocks now, by id: their tokens written and the most they can hold
  // (0 where no step said: a recording does not keep it), for the reservation comparison.
  std::vector<serving::HeldRequest> held_requests() const;
  // A live sequence's KV share, or what a recently released one held last (the last
  // kReleasedKept released sequences are remembered); nullopt for one never seen.
  std::optional<SequenceKv> sequence_kv(int64_t sequence) const;

  // The token records of the newest request that reported them (only the user's request asks
  // for token probabilities), in order. Further samples of its prompt report theirs too, but
  // draw their first tokens in the step that drew its own: they are not watched.
  int64_t watched_request() const { return watched_request_; }
  // The user's own requests (the others are classmates'), in the order they were submitted.
  void mark_own_request(int64_t request) { own_requests_.push_back(request); }
  const std::vector<int64_t>& own_requests() const { return own_requests_; }
  const std::vector<telemetry::TokenRecord>& watched_tokens() const { return watched_tokens_; }
  int64_t blocks_used() const { return blocks_used_; }
  uint64_t kv_bytes_used() const {
    return static_cast<uint64_t>(blocks_used_) * facts_.kv_bytes_per_block;
  }

  // The throughput (telemetry/metrics.h) of the steps drained in the second before now_ms:
  // their tokens over their step time, so slow motion's pauses between steps leave it as is.
  double tokens_per_s(double now_ms) const;

  // How much the folder has taken in, by kind: a reader keeps the revisions it saw last to
  // know what is new (the folder knows nothing of who reads it).
  const FoldRevisions& revisions() const { return revisions_; }

 private:
  void fold_step(const telemetry::StepRecord& step, double now_ms);
  void fold_request(const telemetry::RequestRecord& request);
  void fold_token(const telemetry::TokenRecord& token);
  void fold_kv_event(const telemetry::KvEvent& event, double now_ms);
  void fold_sequence_kv(const telemetry::KvEvent& event);
  template <typename T>
  void keep(std::deque<T>& list, T item);

  size_t history_;
  FoldFacts facts_;
  FoldCounts counts_;
  std::deque<telemetry::StepRecord> steps_;
  std::deque<telemetry::RequestRecord> requests_;
  std::deque<telemetry::KvEvent> kv_events_;
  telemetry::RequestTimeline timeline_;
  std::vector<FoldedBlock> blocks_;
  std::map<int64_t, int64_t> written_;  // sequence -> tokens written, while it holds blocks
  std::map<int64_t, int64_t> longest_;  // sequence -> its longest length, while it holds blocks
  static constexpr size_t kReleasedKept = 64;
  std::map<int64_t, SequenceKv> sequence_kv_;  // live sequences
  std::deque<std::pair<int64_t, SequenceKv>> released_kv_;
  std::deque<KvFillPoint> kv_fill_;
  int64_t watched_request_ = -1;
  int64_t watched_first_step_ = -1;  // the step that drew its first token
  std::set<int64_t> unwatched_samples_;  // the further samples of its prompt
  std::vector<int64_t> own_requests_;
  std::vector<telemetry::TokenRecord> watched_tokens_;
  int64_t blocks_used_ = 0;
  struct Arrival {
    double at_ms;
    int64_t tokens;
    double step_ms;
  };
  std::deque<Arrival> recent_tokens_;  // for tokens_per_s
  FoldRevisions revisions_;
};

}  // namespace servescope::gui
