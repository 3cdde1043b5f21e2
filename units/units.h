// One way to write numbers and units, for every figure ServeScope shows (status bar, panels,
// lessons, tooltips, the answer checker's feedback).
//
// Sizes in memory are binary, so they are written in IEC units: B, KiB (1024 B), MiB (2^20 B),
// GiB (2^30 B), TiB. Decimal prefixes (kB = 1000 B, MB = 10^6 B, GB = 10^9 B) belong only to
// quantities that are decimal by definition: GB/s, GFLOP/s, tokens/s. Numbers use the C
// locale's point with comma thousands separators, the same on every machine, and show only
// the decimals they need ("1 KiB", not "1.00 KiB").
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace servescope::units {

// The shortest text that reads back as the same double: "200", "57.3", "0.025".
std::string format_plain(double value);

// Thousands separators on the whole part, up to `max_decimals` decimals without trailing
// zeros: format_number(272000) == "272,000", format_number(1.5, 2) == "1.5",
// format_number(512000, 3) == "512,000".
std::string format_number(double value, int max_decimals = 0);

// Three significant figures (whole numbers from 100 up, with separators): "0.0123", "57.3",
// "1,234".
std::string format_significant(double value);

// A byte unit, binary (KiB, 1024^power) or decimal (kB, 1000^power); power 0 is "B".
struct ByteUnit {
  std::string_view symbol;  // "B", "KiB", "MiB", "GiB", "TiB", "kB", "MB", "GB", "TB"
  int power = 0;
  bool binary = true;
  double bytes() const;  // 1024^power or 1000^power
};

// The binary unit a size of `bytes` is written in: the largest whose one unit it reaches
// (B below 1 KiB, KiB below 1 MiB, ...; TiB the largest).
ByteUnit binary_unit_for(double bytes);

// The unit a learner typed, read exactly: "B"/"byte"/"bytes", "KiB"/"MiB"/"GiB"/"TiB" (binary),
// "kB"/"MB"/"GB"/"TB" (decimal). Case does not matter ("kib", "mb"; nothing here counts bits,
// so "Mb" is MB), and "KB" is kB, 1000 B, as SI prefixes and most people read it (the older
// JEDEC habit of KB = 1024 B is what KiB now says unambiguously). nullopt for anything else.
std::optional<ByteUnit> parse_byte_unit(std::string_view written);

// The unit of the same power in the other system: KiB <-> kB, MiB <-> MB, ... (B for B).
ByteUnit counterpart(const ByteUnit& unit);

// A size in its binary unit: "512 B", "1,023 B", "1 KiB", "1.33 KiB", "265.6 KiB", "17.6 MiB"
// (two decimals below 10, one from 10 up, trailing zeros dropped; a value that rounds up to
// 1024 of a unit is written in the next one: 1,048,575 B is "1 MiB").
std::string format_bytes(double bytes);

// The exact figure, then the readable size: "272,000 bytes (265.6 KiB)"; "512 bytes" below
// 1 KiB. Rounded to whole bytes: a mean of byte counts (bytes per step over many steps) is
// written "2,149,515 bytes", not "2,149,515.06 bytes".
std::string format_bytes_exact(double bytes);

// A decimal quantity with its unit, three significant figures: "12.2 GB/s", "1,234 tokens/s".
std::string format_decimal(double value, std::string_view unit);

}  // namespace servescope::units
