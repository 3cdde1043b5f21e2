#include "engine/tokenizer/unicode_class.h"

#include <algorithm>
#include <array>
#include <iterator>

namespace servescope {
namespace {

struct CodePointRange {
  char32_t first;
  char32_t last;
  CodePointClass cls;
};

constexpr CodePointRange kRanges[] = {
#include "engine/tokenizer/unicode_tables.inc"
};

// ASCII is most text; a direct table avoids the binary search there.
constexpr std::array<CodePointClass, 128> make_ascii_table() {
  std::array<CodePointClass, 128> table{};
  for (const CodePointRange& range : kRanges) {
    for (char32_t cp = range.first; cp <= range.last && cp < 128; ++cp) table[cp] = range.cls;
  }
  return table;
}

constexpr std::array<CodePointClass, 128> kAsciiClasses = make_ascii_table();

}  // namespace

CodePointClass classify_code_point(char32_t code_point) {
  if (code_point < 128) return kAsciiClasses[code_point];
  // The first range whose last code point is not below code_point.
  const auto* range = std::lower_bound(
      std::begin(kRanges), std::end(kRanges), code_point,
      [](const CodePointRange& r, char32_t cp) { return r.last < cp; });
  if (range != std::end(kRanges) && range->first <= code_point) return range->cls;
  return CodePointClass::kOther;
}

}  // namespace servescope
