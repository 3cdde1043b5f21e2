// Numbers as lessons show them: exact where exactness is the point (bytes), readable always.
#pragma once

#include <string>
#include <string_view>

namespace servescope::lessons {

// The shortest text that reads back as the same double: "200", "57.3", "0.025".
std::string format_plain(double value);

// Thousands separators on the whole part, up to `decimals` decimals without trailing zeros:
// format_number(272000) == "272,000", format_number(1.5, 2) == "1.5".
std::string format_number(double value, int decimals = 0);

// Three significant figures (whole numbers from 100 up, with separators): "0.0123", "57.3",
// "1,234".
std::string format_significant(double value);

// A value with its unit, as placeholders fill them:
//   bytes:    "272,000 bytes (265.6 KiB)" (the exact figure, then KiB / MiB / GiB from 1 KiB,
//             two decimals below 10: "1,360 bytes (1.33 KiB)")
//   tokens, requests: "1,024 tokens"
//   ms, GB/s, GFLOP/s, tokens/s: "57.3 ms"
//   x: "1.98x"
// Any other unit: the number, a space, the unit.
std::string format_quantity(double value, std::string_view unit);

}  // namespace servescope::lessons
