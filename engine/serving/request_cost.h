// What a request costs on a rented device, from a load run's summary: the device is paid for
// the whole run (idle gaps between arrivals included), so a request's share is the run's wall
// time over its requests; the time inside engine steps is reported beside it.
#pragma once

#include <optional>

#include "engine/serving/load_generator.h"

namespace servescope::serving {

struct RequestCost {
  double device_seconds_per_request = 0.0;  // wall seconds of the run / requests
  double busy_seconds_per_request = 0.0;    // seconds inside engine steps / requests
  std::optional<double> price_per_hour;     // the device's price, in the user's currency
  std::optional<double> price_per_request;  // device_seconds_per_request x price_per_hour / 3600
  std::optional<double> price_per_million_output_tokens;
};

// InputError for a negative or non-finite price. A run without requests costs nothing per
// request (zeros), not a division by zero.
RequestCost request_cost(const LoadSummary& summary, std::optional<double> price_per_hour);

}  // namespace servescope::serving
