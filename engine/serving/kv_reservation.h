// Paged against reserved: what the requests holding KV blocks now would need if each reserved
// its longest possible sequence contiguously up front, as servers did before paged attention.
// The block pool hands out blocks as tokens arrive; a reservation sets aside prompt +
// max_tokens (capped at the context) whether the request ever gets there or not.
#pragma once

#include <cstdint>
#include <span>

namespace servescope::serving {

struct HeldRequest {
  int64_t id = 0;
  int64_t tokens = 0;   // its context now: every token whose keys and values are cached
  int64_t longest = 0;  // prompt + max_tokens, capped at the context
};

struct ReservationComparison {
  int64_t requests = 0;
  uint64_t used_bytes = 0;      // the requests' tokens x bytes per token
  uint64_t reserved_bytes = 0;  // their longest lengths x bytes per token
  uint64_t capacity_bytes = 0;  // the pool's
  // Requests that would not have fitted: reserving in order of id, those after the capacity ran
  // out.
  int64_t would_not_fit = 0;
  // The share of the reserved bytes no token uses (0 when nothing is reserved).
  double unused_share() const {
    return reserved_bytes > 0
               ? 1.0 - static_cast<double>(used_bytes) / static_cast<double>(reserved_bytes)
               : 0.0;
  }
};

// `held` in order of id.
ReservationComparison compare_with_reservation(std::span<const HeldRequest> held,
                                               uint64_t bytes_per_token, uint64_t capacity_bytes);

}  // namespace servescope::serving
