#include "app/lessons/format.h"

#include <array>
#include <charconv>
#include <cmath>

namespace servescope::lessons {
namespace {

std::string with_separators(const std::string& digits) {
  std::string out;
  const size_t n = digits.size();
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string trim_zeros(std::string text) {
  if (text.find('.') == std::string::npos) return text;
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text;
}

}  // namespace

std::string format_plain(double value) {
  std::array<char, 64> buffer{};
  const auto [end, error] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  return error == std::errc() ? std::string(buffer.data(), end) : std::string("?");
}

std::string format_number(double value, int decimals) {
  if (!std::isfinite(value)) return format_plain(value);
  // to_chars, not printf: the C locale may have been set to one with a decimal comma (Qt does
  // setlocale from the environment).
  std::array<char, 400> buffer{};
  const auto [end, error] = std::to_chars(buffer.data(), buffer.data() + buffer.size(),
                                          std::fabs(value), std::chars_format::fixed, decimals);
  if (error != std::errc()) return format_plain(value);
  std::string text = trim_zeros(std::string(buffer.data(), end));
  const size_t dot = text.find('.');
  const std::string whole = text.substr(0, dot);
  const std::string fraction = dot == std::string::npos ? std::string() : text.substr(dot);
  const bool negative = value < 0 && (whole != "0" || !fraction.empty());
  return (negative ? "-" : "") + with_separators(whole) + fraction;
}

std::string format_significant(double value) {
  const double magnitude = std::fabs(value);
  if (magnitude >= 100 || magnitude == 0) return format_number(value);
  const int digits = static_cast<int>(std::floor(std::log10(magnitude)));
  return format_number(value, 2 - digits);
}

std::string format_quantity(double value, std::string_view unit) {
  if (unit == "bytes") {
    std::string text = format_number(value) + " bytes";
    constexpr std::array<const char*, 3> kNames = {"KiB", "MiB", "GiB"};
    double scaled = std::fabs(value);
    int index = -1;
    while (scaled >= 1024 && index + 1 < static_cast<int>(kNames.size())) {
      scaled /= 1024;
      ++index;
    }
    if (index >= 0) {
      const int decimals = scaled < 10 ? 2 : 1;
      text +=
          " (" + format_number(value < 0 ? -scaled : scaled, decimals) + " " + kNames[index] + ")";
    }
    return text;
  }
  if (unit == "tokens" || unit == "requests") return format_number(value) + " " + std::string(unit);
  if (unit == "x") return format_significant(value) + "x";
  if (unit.empty()) return format_significant(value);
  return format_significant(value) + " " + std::string(unit);
}

}  // namespace servescope::lessons
