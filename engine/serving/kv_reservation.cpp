#include "engine/serving/kv_reservation.h"

#include <algorithm>

namespace servescope::serving {

ReservationComparison compare_with_reservation(std::span<const HeldRequest> held,
                                               uint64_t bytes_per_token, uint64_t capacity_bytes) {
  ReservationComparison c;
  c.capacity_bytes = capacity_bytes;
  for (const HeldRequest& r : held) {
    const auto reserved = static_cast<uint64_t>(std::max(r.longest, r.tokens)) * bytes_per_token;
    ++c.requests;
    c.used_bytes += static_cast<uint64_t>(r.tokens) * bytes_per_token;
    c.reserved_bytes += reserved;
    if (c.reserved_bytes > capacity_bytes) ++c.would_not_fit;
  }
  return c;
}

}  // namespace servescope::serving
