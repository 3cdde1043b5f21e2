// Paged against reserved, worked by hand: three requests of 2,560-byte tokens in a 40 KiB pool.
#include "engine/serving/kv_reservation.h"

#include <gtest/gtest.h>

#include <vector>

namespace servescope::serving {
namespace {

TEST(KvReservation, ReservingEachLongestLengthAgainstTheTokensUsed) {
  constexpr uint64_t kPerToken = 2560;
  const std::vector<HeldRequest> held = {
      {.id = 3, .tokens = 5, .longest = 8},   // reserves 8 x 2,560 = 20,480
      {.id = 4, .tokens = 2, .longest = 6},   // 15,360: 35,840 so far, inside 40,960
      {.id = 7, .tokens = 1, .longest = 4}};  // 10,240: 46,080, past the pool
  const ReservationComparison c = compare_with_reservation(held, kPerToken, 40960);
  EXPECT_EQ(c.requests, 3);
  EXPECT_EQ(c.used_bytes, 8 * kPerToken);
  EXPECT_EQ(c.reserved_bytes, 18 * kPerToken);
  EXPECT_EQ(c.capacity_bytes, 40960u);
  EXPECT_EQ(c.would_not_fit, 1);
  EXPECT_DOUBLE_EQ(c.unused_share(), 1.0 - 8.0 / 18.0);
}

TEST(KvReservation, ARequestPastItsReportedLengthReservesWhatItHolds) {
  const std::vector<HeldRequest> held = {{.id = 1, .tokens = 9, .longest = 0}};
  const ReservationComparison c = compare_with_reservation(held, 10, 1000);
  EXPECT_EQ(c.reserved_bytes, 90u);
  EXPECT_DOUBLE_EQ(c.unused_share(), 0.0);
  EXPECT_EQ(compare_with_reservation({}, 10, 1000).unused_share(), 0.0);
}

}  // namespace
}  // namespace servescope::serving
