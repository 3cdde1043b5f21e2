// Numbers as lessons show them: exact where exactness is the point (bytes), readable always.
// The numbers and sizes themselves are written by units/units.h, as everywhere in ServeScope.
#pragma once

#include <string>
#include <string_view>

#include "units/units.h"

namespace servescope::lessons {

using units::format_number;
using units::format_plain;
using units::format_significant;

// A value with its unit, as placeholders fill them:
//   bytes:    "272,000 bytes (265.6 KiB)" (units::format_bytes_exact)
//   tokens, requests: "1,024 tokens"
//   ms, GB/s, GFLOP/s, tokens/s: "57.3 ms" (units::format_decimal)
//   x: "1.98x"
// Any other unit: the number, a space, the unit.
std::string format_quantity(double value, std::string_view unit);

}  // namespace servescope::lessons
