// Command-line options of servescope-cli: `--name value` options and `--flag` switches, checked
// against what the subcommand accepts so a typo is an error, not silently ignored.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace servescope::cli {

// Thrown for bad command lines; main prints the message as a one-line reason.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct OptionSpec {
  std::set<std::string> valued;    // e.g. "model", "text" (given as --model PATH)
  std::set<std::string> switches;  // e.g. "greedy", "json"
};

class Options {
 public:
  // args excludes the program and subcommand names.
  Options(const std::vector<std::string>& args, const OptionSpec& spec);

  bool has(const std::string& name) const;
  std::optional<std::string> get(const std::string& name) const;
  std::string get_or(const std::string& name, const std::string& fallback) const;
  int64_t get_int(const std::string& name, int64_t fallback) const;
  double get_double(const std::string& name, double fallback) const;

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> switches_;
};

// "1, 2,3" -> {1, 2, 3}; UsageError naming the bad entry otherwise.
std::vector<int32_t> parse_id_list(const std::string& text);

}  // namespace servescope::cli
