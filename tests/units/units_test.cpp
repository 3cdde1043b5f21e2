#include "units/units.h"

#include <gtest/gtest.h>

namespace servescope::units {
namespace {

constexpr double kKiB = 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

TEST(FormatBytes, BelowOneKibibyteIsWholeBytes) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1023), "1,023 B");
  EXPECT_EQ(format_bytes(8.5), "8.5 B");  // a Q8_0 row's bytes per element can be fractional
}

TEST(FormatBytes, EachUnitStartsAtItsOwnPowerOf1024) {
  EXPECT_EQ(format_bytes(1024), "1 KiB");
  EXPECT_EQ(format_bytes(kMiB), "1 MiB");
  EXPECT_EQ(format_bytes(kGiB), "1 GiB");
  EXPECT_EQ(format_bytes(1024 * kGiB), "1 TiB");
  EXPECT_EQ(format_bytes(4096 * kGiB), "4 TiB");  // TiB is the largest unit
}

TEST(FormatBytes, ShowsOnlyTheDecimalsTheValueNeeds) {
  EXPECT_EQ(format_bytes(1360), "1.33 KiB");      // two decimals below 10
  EXPECT_EQ(format_bytes(272000), "265.6 KiB");   // one from 10 up
  EXPECT_EQ(format_bytes(18459648), "17.6 MiB");  // the bundled model's weights
  EXPECT_EQ(format_bytes(5 * kMiB), "5 MiB");     // not "5.00 MiB"
  EXPECT_EQ(format_bytes(1.5 * kKiB), "1.5 KiB");
  EXPECT_EQ(format_bytes(1536 * kMiB), "1.5 GiB");
}

TEST(FormatBytes, AValueThatRoundsUpTo1024IsWrittenInTheNextUnit) {
  EXPECT_EQ(format_bytes(1023.999), "1 KiB");
  EXPECT_EQ(format_bytes(kMiB - 1), "1 MiB");  // 1023.999 KiB
  EXPECT_EQ(format_bytes(kMiB - 60 * kKiB), "964 KiB");
  EXPECT_EQ(format_bytes(kGiB - 1), "1 GiB");
}

TEST(FormatBytes, NegativeSizesKeepTheirSign) {
  EXPECT_EQ(format_bytes(-1536), "-1.5 KiB");
  EXPECT_EQ(format_bytes(-512), "-512 B");
}

TEST(FormatBytes, ExactFigureThenTheReadableSize) {
  EXPECT_EQ(format_bytes_exact(272000), "272,000 bytes (265.6 KiB)");
  EXPECT_EQ(format_bytes_exact(1023), "1,023 bytes");
  EXPECT_EQ(format_bytes_exact(1024), "1,024 bytes (1 KiB)");
  EXPECT_EQ(format_bytes_exact(3 * kGiB), "3,221,225,472 bytes (3 GiB)");
}

TEST(FormatBytes, AMeanOfByteCountsIsWrittenInWholeBytes) {
  EXPECT_EQ(format_bytes_exact(2149515.06), "2,149,515 bytes (2.05 MiB)");
  EXPECT_EQ(format_bytes_exact(1023.5), "1,024 bytes (1 KiB)");
  EXPECT_EQ(format_bytes_exact(511.49), "511 bytes");
}

TEST(FormatDecimal, RatesKeepTheirDecimalUnitAndThreeSignificantFigures) {
  EXPECT_EQ(format_decimal(12.2345, "GB/s"), "12.2 GB/s");
  EXPECT_EQ(format_decimal(33.3, "GFLOP/s"), "33.3 GFLOP/s");
  EXPECT_EQ(format_decimal(1234.4, "tokens/s"), "1,234 tokens/s");
  EXPECT_EQ(format_decimal(3.634, "tokens/s"), "3.63 tokens/s");
}

TEST(FormatNumber, SeparatorsAndNoTrailingZeros) {
  EXPECT_EQ(format_number(512000, 3), "512,000");  // not "512,000.000"
  EXPECT_EQ(format_number(1.5, 2), "1.5");
  EXPECT_EQ(format_number(-1234567.5, 1), "-1,234,567.5");
  EXPECT_EQ(format_number(-0.0001, 2), "0");
  EXPECT_EQ(format_significant(0.01234), "0.0123");
  EXPECT_EQ(format_plain(12.5), "12.5");
}

TEST(ParseByteUnit, ReadsEachUnitExactly) {
  const auto bytes_of = [](std::string_view written) {
    const auto unit = parse_byte_unit(written);
    return unit ? unit->bytes() : -1.0;
  };
  EXPECT_EQ(bytes_of("B"), 1.0);
  EXPECT_EQ(bytes_of("bytes"), 1.0);
  EXPECT_EQ(bytes_of("kB"), 1e3);
  EXPECT_EQ(bytes_of("KB"), 1e3);  // KB is read as kB: 1000 bytes
  EXPECT_EQ(bytes_of("KiB"), kKiB);
  EXPECT_EQ(bytes_of("MB"), 1e6);
  EXPECT_EQ(bytes_of("MiB"), kMiB);
  EXPECT_EQ(bytes_of("GB"), 1e9);
  EXPECT_EQ(bytes_of("GiB"), kGiB);
  EXPECT_EQ(bytes_of("mib"), kMiB);
  EXPECT_FALSE(parse_byte_unit("MiBs"));
  EXPECT_FALSE(parse_byte_unit("ms"));
  EXPECT_FALSE(parse_byte_unit(""));
}

TEST(ParseByteUnit, EachUnitHasItsCounterpartOfTheSamePower) {
  EXPECT_EQ(counterpart(*parse_byte_unit("KB")).symbol, "KiB");
  EXPECT_EQ(counterpart(*parse_byte_unit("MiB")).symbol, "MB");
  EXPECT_EQ(counterpart(*parse_byte_unit("B")).symbol, "B");
  EXPECT_EQ(binary_unit_for(kMiB).symbol, "MiB");
  EXPECT_EQ(binary_unit_for(kMiB - 1).symbol, "KiB");
}

}  // namespace
}  // namespace servescope::units
