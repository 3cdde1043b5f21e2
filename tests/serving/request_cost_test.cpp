// Cost per request and latency percentiles, against arithmetic done by hand.
#include "engine/serving/request_cost.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "engine/core/error.h"

namespace servescope::serving {
namespace {

TEST(LatencyPercentiles, InterpolateBetweenTheSortedValues) {
  // Sorted: 1..10. Rank of p = p/100 x 9: p50 4.5 -> 5.5, p90 8.1 -> 9.1, p99 8.91 -> 9.91.
  const std::vector<double> ms = {7, 1, 3, 10, 5, 2, 9, 4, 8, 6};
  const Percentiles p = percentiles(ms);
  EXPECT_DOUBLE_EQ(p.p50, 5.5);
  EXPECT_DOUBLE_EQ(p.p90, 9.1);
  EXPECT_DOUBLE_EQ(p.p99, 9.91);
  const Percentiles one = percentiles(std::vector<double>{42.0});
  EXPECT_EQ(one.p50, 42.0);
  EXPECT_EQ(one.p99, 42.0);
}

LoadSummary four_requests() {
  LoadSummary s;
  s.requests = 4;
  s.wall_s = 2.0;  // the device is held for 2 s
  s.busy_s = 1.5;  // of which 1.5 s in steps
  s.output_tokens = 400;
  return s;
}

TEST(RequestCost, SharesTheRunsWallTimeAndPriceOverItsRequests) {
  // 3.60 an hour = 0.001 a second; 2 s / 4 requests = 0.5 s each = 0.0005 each;
  // 2 s x 0.001 / 400 tokens x 1e6 = 5.0 per million output tokens.
  const RequestCost cost = request_cost(four_requests(), 3.6);
  EXPECT_DOUBLE_EQ(cost.device_seconds_per_request, 0.5);
  EXPECT_DOUBLE_EQ(cost.busy_seconds_per_request, 0.375);
  ASSERT_TRUE(cost.price_per_request.has_value());
  EXPECT_DOUBLE_EQ(*cost.price_per_request, 0.0005);
  EXPECT_DOUBLE_EQ(*cost.price_per_million_output_tokens, 5.0);
  EXPECT_DOUBLE_EQ(*cost.price_per_hour, 3.6);
}

TEST(RequestCost, WithoutAPriceOnlyDeviceTime) {
  const RequestCost cost = request_cost(four_requests(), std::nullopt);
  EXPECT_DOUBLE_EQ(cost.device_seconds_per_request, 0.5);
  EXPECT_FALSE(cost.price_per_hour.has_value());
  EXPECT_FALSE(cost.price_per_request.has_value());
}

TEST(RequestCost, NoRequestsCostNothingAndABadPriceIsRefused) {
  const RequestCost none = request_cost(LoadSummary{}, 2.0);
  EXPECT_EQ(none.device_seconds_per_request, 0.0);
  EXPECT_EQ(*none.price_per_request, 0.0);
  EXPECT_EQ(*none.price_per_million_output_tokens, 0.0);
  EXPECT_THROW(request_cost(four_requests(), -1.0), InputError);
  EXPECT_THROW(request_cost(four_requests(), std::numeric_limits<double>::infinity()), InputError);
}

}  // namespace
}  // namespace servescope::serving
