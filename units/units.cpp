#include "units/units.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>

namespace servescope::units {
namespace {

constexpr std::array<std::string_view, 5> kBinarySymbols = {"B", "KiB", "MiB", "GiB", "TiB"};
constexpr std::array<std::string_view, 5> kDecimalSymbols = {"B", "kB", "MB", "GB", "TB"};
constexpr int kLargestPower = static_cast<int>(kBinarySymbols.size()) - 1;

ByteUnit unit_of(int power, bool binary) {
  const auto& symbols = binary ? kBinarySymbols : kDecimalSymbols;
  return {symbols[static_cast<size_t>(power)], power, binary};
}

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

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

// How many decimals a size shown in `unit` gets: whole bytes (fractions only where a byte
// count is fractional, as Q8_0's 34/32 bytes per element make it), two below 10, one above.
int size_decimals(double scaled, const ByteUnit& unit) {
  if (unit.power == 0) return 2;
  return std::fabs(scaled) < 10 ? 2 : 1;
}

double round_to(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

}  // namespace

double ByteUnit::bytes() const { return std::pow(binary ? 1024.0 : 1000.0, power); }

ByteUnit binary_unit_for(double bytes) {
  int power = 0;
  double scaled = std::fabs(bytes);
  while (scaled >= 1024 && power < kLargestPower) {
    scaled /= 1024;
    ++power;
  }
  return unit_of(power, true);
}

std::optional<ByteUnit> parse_byte_unit(std::string_view written) {
  for (const std::string_view bytes_word : {"byte", "bytes"}) {
    if (equal_ignoring_case(written, bytes_word)) return unit_of(0, true);
  }
  for (int power = 0; power <= kLargestPower; ++power) {
    for (const bool binary : {true, false}) {
      const ByteUnit unit = unit_of(power, binary);
      if (equal_ignoring_case(written, unit.symbol)) return unit;
    }
  }
  return std::nullopt;
}

ByteUnit counterpart(const ByteUnit& unit) { return unit_of(unit.power, !unit.binary); }

std::string format_plain(double value) {
  std::array<char, 64> buffer{};
  const auto [end, error] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  return error == std::errc() ? std::string(buffer.data(), end) : std::string("?");
}

std::string format_number(double value, int max_decimals) {
  if (!std::isfinite(value)) return format_plain(value);
  // to_chars, not printf: the C locale may have been set to one with a decimal comma (Qt does
  // setlocale from the environment).
  std::array<char, 400> buffer{};
  const auto [end, error] = std::to_chars(buffer.data(), buffer.data() + buffer.size(),
                                          std::fabs(value), std::chars_format::fixed, max_decimals);
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
  if (magnitude >= 100 || magnitude == 0 || !std::isfinite(magnitude)) return format_number(value);
  const int digits = static_cast<int>(std::floor(std::log10(magnitude)));
  return format_number(value, 2 - digits);
}

std::string format_bytes(double bytes) {
  if (!std::isfinite(bytes)) return format_plain(bytes) + " B";
  ByteUnit unit = binary_unit_for(bytes);
  double scaled = round_to(bytes / unit.bytes(), size_decimals(bytes / unit.bytes(), unit));
  // 1,048,575 B is 1023.999 KiB, which rounds to 1024 KiB: that is written 1 MiB.
  if (std::fabs(scaled) >= 1024 && unit.power < kLargestPower) {
    unit = unit_of(unit.power + 1, true);
    scaled = round_to(bytes / unit.bytes(), size_decimals(bytes / unit.bytes(), unit));
  }
  return format_number(scaled, size_decimals(scaled, unit)) + " " + std::string(unit.symbol);
}

std::string format_bytes_exact(double bytes) {
  const double whole = std::round(bytes);
  std::string text = format_number(whole) + " bytes";
  if (binary_unit_for(whole).power > 0) text += " (" + format_bytes(whole) + ")";
  return text;
}

std::string format_decimal(double value, std::string_view unit) {
  return format_significant(value) + " " + std::string(unit);
}

}  // namespace servescope::units
