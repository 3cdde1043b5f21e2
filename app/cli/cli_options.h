// Command-line options of servescope-cli: `--name value` options and `--flag` switches, checked
// against what the subcommand accepts so a typo is an error, not silently ignored. Every numeric
// option has bounds (one table, kOptionBounds in cli_options.cpp), checked when it is read, so
// an absurd value is a one-line error that names the limit, never an hour's wait or a machine
// out of memory.
#pragma once

#include <cstdint>
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

// The accepted range of a numeric option.
struct OptionBounds {
  double min = 0.0;
  double max = 0.0;
  bool zero_allowed = false;  // 0 is accepted below min (--rate 0: every client at once)
  bool bytes = false;         // a size: bounds print as "1.0 TiB"
};

// The bounds of --name; std::logic_error for a numeric option missing from the table.
const OptionBounds& option_bounds(const std::string& name);
// UsageError unless `value` is within --name's bounds: "--max-batch 100000 is above the limit
// of 256". `text` is the value as given.
void check_bounds(const std::string& name, double value, const std::string& text);

// "256MiB", "1.5 GiB", "64KiB", "100000" (bytes): binary units KiB/MiB/GiB/TiB (K, M, G, T
// alike), decimal kB/MB/GB/TB, B or none for bytes. nullopt when the text is not a size.
std::optional<uint64_t> parse_byte_size(const std::string& text);

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
  // The value of a numeric option within its bounds (option_bounds), or the fallback when it
  // is not given. UsageError for a value that is not a number or is out of bounds.
  int64_t get_int(const std::string& name, int64_t fallback) const;
  double get_double(const std::string& name, double fallback) const;
  // A size in bytes with an optional unit (parse_byte_size), within its bounds.
  uint64_t get_bytes(const std::string& name, uint64_t fallback) const;

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> switches_;
};

// "1, 2,3" -> {1, 2, 3}; UsageError naming the bad entry otherwise.
std::vector<int32_t> parse_id_list(const std::string& text);

}  // namespace servescope::cli
