#include "app/lessons/format.h"

namespace servescope::lessons {

std::string format_quantity(double value, std::string_view unit) {
  if (unit == "bytes") return units::format_bytes_exact(value);
  if (unit == "tokens" || unit == "requests") return format_number(value) + " " + std::string(unit);
  if (unit == "x") return format_significant(value) + "x";
  if (unit.empty()) return format_significant(value);
  return units::format_decimal(value, unit);
}

}  // namespace servescope::lessons
