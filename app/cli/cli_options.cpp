#include "app/cli/cli_options.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <utility>

#include "engine/serving/kv_budget.h"

namespace servescope::cli {
namespace {

constexpr double kKiB = 1024.0;
constexpr double kMiB = kKiB * kKiB;
constexpr double kTiB = kMiB * kMiB;
constexpr double kLargestSeed = static_cast<double>(std::numeric_limits<int64_t>::max());

// The bounds of every numeric option of every subcommand: an option read with get_int,
// get_double or get_bytes must be here. Limits are generous for real use and stop what would
// hang or exhaust memory (a max batch of 100,000, a Poisson rate of 1e-9 requests/s).
const std::map<std::string, OptionBounds, std::less<>>& bounds_table() {
  static const std::map<std::string, OptionBounds, std::less<>> table = {
      // the model and its backend
      {"device", {0, 1023}},  // an index past the devices there are names them
      {"threads", {1, 1024}},
      // generation and sampling
      {"max-tokens", {1, 1 << 20}},
      {"temperature", {0, 100}},
      {"top-k", {0, 1 << 20}},
      {"top-p", {0, 1}},
      {"top", {0, 100}},
      {"seed", {0, kLargestSeed}},
      {"n", {1, 64}},  // samples of one prompt: a batch slot each
      // the serving engine
      {"max-batch", {1, 256}},
      {"token-budget", {1, 65536}},
      {"block-size", {1, 256}},
      {"kv-blocks", {1, 1 << 20}},
      {"kv-bytes",
       {kKiB, kTiB, false, true}},  // and at most the machine's memory (apply_kv_budget)
      {"batch-wait-ms", {0, 60000}},
      {"timeout-s", {0.1, 3600}},  // bench --remote: silence from the server this long fails
      // the load generator
      {"clients", {1, 10000}},
      {"rate", {0.1, 1e6, true}},  // 0: all at once; below 0.1/s a run takes hours
      {"prompt-tokens", {1, 1 << 20}},
      {"output-tokens", {1, 1 << 20}},
      {"sweep-max", {1, 32}},
      {"price-per-hour", {0, 1e6}},
      // evaluation
      {"max-chunks", {0, 1e6}},
      {"greedy-tokens", {0, 4096}},
      {"max-kl", {0, 1000}},
      {"min-speedup", {0, 1000}},
      {"max-tpot-ms", {0, 1e6}},
      {"layer", {0, 65535}},
      {"head", {0, 65535}},
      // make-model's shape (eval::validate_shape checks how the parts fit together)
      {"dim", {1, 65536}},
      {"layers", {1, 1024}},
      {"ffn", {1, 262144}},
      {"heads", {1, 65536}},
      {"kv-heads", {1, 65536}},
      {"context", {16, 32768}},
      {"vocab", {1, 1 << 20}},
  };
  return table;
}

// 256 -> "256", 0.1 -> "0.1", a size -> "1.0 TiB": bounds as a person types them.
std::string bound_text(double bound, const OptionBounds& bounds) {
  if (bounds.bytes) return serving::iec_bytes(static_cast<uint64_t>(bound));
  char text[32];
  std::snprintf(text, sizeof text, "%.15g", bound);
  return text;
}

template <typename T>
std::optional<T> parse_number(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

}  // namespace

const OptionBounds& option_bounds(const std::string& name) {
  const auto it = bounds_table().find(name);
  if (it == bounds_table().end()) {
    throw std::logic_error("--" + name + " is a numeric option without bounds");
  }
  return it->second;
}

void check_bounds(const std::string& name, double value, const std::string& text) {
  const OptionBounds& bounds = option_bounds(name);
  if (bounds.zero_allowed && value == 0.0) return;
  if (value < bounds.min) {
    throw UsageError("--" + name + " " + text + " is below the limit of " +
                     bound_text(bounds.min, bounds) + (bounds.zero_allowed ? " (or 0)" : ""));
  }
  if (value > bounds.max) {
    throw UsageError("--" + name + " " + text + " is above the limit of " +
                     bound_text(bounds.max, bounds));
  }
}

std::optional<uint64_t> parse_byte_size(const std::string& text) {
  static const std::pair<std::string_view, double> kUnits[] = {
      {"", 1},     {"b", 1},      {"k", kKiB},   {"kib", kKiB},      {"kb", 1e3},
      {"m", kMiB}, {"mib", kMiB}, {"mb", 1e6},   {"g", kKiB * kMiB}, {"gib", kKiB * kMiB},
      {"gb", 1e9}, {"t", kTiB},   {"tib", kTiB}, {"tb", 1e12}};
  size_t number_end = 0;
  while (number_end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[number_end])) || text[number_end] == '.')) {
    ++number_end;
  }
  const auto number = parse_number<double>(std::string_view(text).substr(0, number_end));
  std::string unit;
  for (const char c : text.substr(number_end)) {
    if (c != ' ') unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (!number) return std::nullopt;
  for (const auto& [name, scale] : kUnits) {
    if (unit != name) continue;
    const double bytes = std::round(*number * scale);
    if (!(bytes < 0x1p64)) return std::nullopt;
    return static_cast<uint64_t>(bytes);
  }
  return std::nullopt;
}

Options::Options(const std::vector<std::string>& args, const OptionSpec& spec) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0) throw UsageError("unexpected argument '" + arg + "'");
    std::string name = arg.substr(2);
    std::optional<std::string> inline_value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (spec.switches.count(name) && !inline_value) {
      switches_.insert(name);
    } else if (spec.valued.count(name)) {
      if (!inline_value && i + 1 >= args.size()) throw UsageError("--" + name + " needs a value");
      values_[name] = inline_value ? *inline_value : args[++i];
    } else {
      throw UsageError("unknown option --" + name + " for this subcommand (see --help)");
    }
  }
}

bool Options::has(const std::string& name) const {
  return switches_.count(name) > 0 || values_.count(name) > 0;
}

std::optional<std::string> Options::get(const std::string& name) const {
  const auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Options::get_or(const std::string& name, const std::string& fallback) const {
  return get(name).value_or(fallback);
}

int64_t Options::get_int(const std::string& name, int64_t fallback) const {
  const auto text = get(name);
  if (!text) return fallback;
  const auto value = parse_number<int64_t>(*text);
  if (!value) throw UsageError("--" + name + " needs an integer, got '" + *text + "'");
  check_bounds(name, static_cast<double>(*value), *text);
  return *value;
}

double Options::get_double(const std::string& name, double fallback) const {
  const auto text = get(name);
  if (!text) return fallback;
  const auto value = parse_number<double>(*text);
  if (!value || !std::isfinite(*value)) {
    throw UsageError("--" + name + " needs a number, got '" + *text + "'");
  }
  check_bounds(name, *value, *text);
  return *value;
}

uint64_t Options::get_bytes(const std::string& name, uint64_t fallback) const {
  const auto text = get(name);
  if (!text) return fallback;
  const auto bytes = parse_byte_size(*text);
  if (!bytes) {
    throw UsageError("--" + name + " needs a size such as 256MiB, 1GiB or 65536 (bytes), got '" +
                     *text + "'");
  }
  check_bounds(name, static_cast<double>(*bytes), *text);
  return *bytes;
}

std::vector<int32_t> parse_id_list(const std::string& text) {
  std::vector<int32_t> ids;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const auto id = parse_number<int32_t>(item);
    if (!id) throw UsageError("--ids: '" + item + "' is not a token id (expected e.g. 1,2,3)");
    ids.push_back(*id);
    start = comma + 1;
  }
  return ids;
}

}  // namespace servescope::cli
