#include "engine/serving/request_cost.h"

#include <cmath>

#include "engine/core/error.h"

namespace servescope::serving {

RequestCost request_cost(const LoadSummary& summary, std::optional<double> price_per_hour) {
  if (price_per_hour && (!(*price_per_hour >= 0.0) || std::isinf(*price_per_hour))) {
    throw InputError("the price per hour must be a finite number >= 0");
  }
  RequestCost cost;
  cost.price_per_hour = price_per_hour;
  const auto requests = static_cast<double>(summary.requests);
  if (requests > 0.0) {
    cost.device_seconds_per_request = summary.wall_s / requests;
    cost.busy_seconds_per_request = summary.busy_s / requests;
  }
  if (!price_per_hour) return cost;
  const double price_per_second = *price_per_hour / 3600.0;
  cost.price_per_request = cost.device_seconds_per_request * price_per_second;
  cost.price_per_million_output_tokens =
      summary.output_tokens > 0
          ? summary.wall_s * price_per_second / static_cast<double>(summary.output_tokens) * 1e6
          : 0.0;
  return cost;
}

}  // namespace servescope::serving
