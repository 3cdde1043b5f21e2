#include "app/cli/cli_options.h"

#include <charconv>
#include <cmath>

namespace servescope::cli {
namespace {

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
  return *value;
}

double Options::get_double(const std::string& name, double fallback) const {
  const auto text = get(name);
  if (!text) return fallback;
  const auto value = parse_number<double>(*text);
  if (!value || !std::isfinite(*value)) {
    throw UsageError("--" + name + " needs a number, got '" + *text + "'");
  }
  return *value;
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
