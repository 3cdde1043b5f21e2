// Prometheus's text exposition format, as a serving engine's /metrics answers: one sample per
// line, `name{label="value",...} number [timestamp]`, with "# HELP" and "# TYPE" comments.
// Only what the panels read is kept: each sample's name, labels and value.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace servescope::remote {

// A /metrics answer that is not Prometheus text; what() names the line.
class MetricsFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PrometheusSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0.0;
};

// Every sample, in order. MetricsFormatError naming the first malformed line (1-based).
std::vector<PrometheusSample> parse_prometheus_text(std::string_view text);

}  // namespace servescope::remote
