#include "app/remote/prometheus_text.h"

#include <cmath>
#include <cstdlib>
#include <limits>

namespace servescope::remote {
namespace {

bool name_char(char c, bool first) {
  const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
  return letter || (!first && c >= '0' && c <= '9');
}

// "+Inf", "-Inf", "NaN" or a decimal number (Go's float formatting, which Prometheus uses).
bool parse_value(std::string_view text, double& value) {
  if (text == "+Inf" || text == "Inf") {
    value = std::numeric_limits<double>::infinity();
    return true;
  }
  if (text == "-Inf") {
    value = -std::numeric_limits<double>::infinity();
    return true;
  }
  if (text == "NaN") {
    value = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  const std::string copy(text);
  char* end = nullptr;
  value = std::strtod(copy.c_str(), &end);
  return !copy.empty() && end == copy.c_str() + copy.size();
}

class LineReader {
 public:
  LineReader(std::string_view line, size_t number) : line_(line), number_(number) {}

  PrometheusSample sample() {
    PrometheusSample s;
    s.name = name();
    if (peek() == '{') labels(s.labels);
    skip_spaces();
    const size_t start = at_;
    while (at_ < line_.size() && line_[at_] != ' ' && line_[at_] != '\t') ++at_;
    if (!parse_value(line_.substr(start, at_ - start), s.value)) fail("its value is not a number");
    return s;  // a timestamp may follow; it is not needed
  }

 private:
  char peek() const { return at_ < line_.size() ? line_[at_] : '\0'; }
  void skip_spaces() {
    while (peek() == ' ' || peek() == '\t') ++at_;
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw MetricsFormatError("line " + std::to_string(number_) + " of the metrics is not " +
                             "Prometheus text: " + why + " ('" + std::string(line_.substr(0, 80)) +
                             "')");
  }
  std::string name() {
    const size_t start = at_;
    while (at_ < line_.size() && name_char(line_[at_], at_ == start)) ++at_;
    if (at_ == start) fail("it does not start with a metric name");
    return std::string(line_.substr(start, at_ - start));
  }
  void labels(std::map<std::string, std::string>& out) {
    ++at_;  // '{'
    while (true) {
      skip_spaces();
      if (peek() == '}') break;
      const std::string key = name();
      if (peek() != '=') fail("a label without '='");
      ++at_;
      if (peek() != '"') fail("a label value without quotes");
      ++at_;
      std::string value;
      while (peek() != '"') {
        if (at_ >= line_.size()) fail("a label value is not closed");
        char c = line_[at_++];
        if (c == '\\' && at_ < line_.size()) {
          const char escaped = line_[at_++];
          c = escaped == 'n' ? '\n' : escaped;
        }
        value += c;
      }
      ++at_;  // closing quote
      out[key] = value;
      skip_spaces();
      if (peek() == ',') {
        ++at_;
        continue;
      }
      if (peek() != '}') fail("labels are not closed with '}'");
    }
    ++at_;  // '}'
  }

  std::string_view line_;
  size_t number_;
  size_t at_ = 0;
};

}  // namespace

std::vector<PrometheusSample> parse_prometheus_text(std::string_view text) {
  std::vector<PrometheusSample> samples;
  size_t number = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty() || line.front() == '#') continue;
    samples.push_back(LineReader(line, number).sample());
  }
  return samples;
}

}  // namespace servescope::remote
