#include "app/lessons/answers.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>

#include "app/lessons/format.h"

namespace servescope::lessons {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return std::string(s.substr(first, s.find_last_not_of(" \t") - first + 1));
}

// Written units that convert to the question's unit, with the factor to multiply by. Byte
// units are read by units::parse_byte_unit, exactly (KB and kB 1000, KiB 1024).
std::map<std::string, double> conversions(std::string_view unit) {
  const std::string u = lower(unit);
  std::map<std::string, double> table = {{"", 1.0}, {u, 1.0}};
  if (u == "ms") {
    table.insert({{"s", 1e3}, {"us", 1e-3}, {"\xC2\xB5s", 1e-3}});
  } else if (u == "gb/s") {
    table.insert({{"mb/s", 1e-3}, {"tb/s", 1e3}});
  } else if (u == "gflop/s") {
    table.insert({{"mflop/s", 1e-3}, {"tflop/s", 1e3}});
  } else if (u == "x") {
    table.insert({{"times", 1.0}});
  } else if (u == "requests") {
    table.insert({{"request", 1.0}});
  } else if (u == "tokens") {
    table.insert({{"token", 1.0}});
  }
  return table;
}

// What the learner typed: the number, the unit as written, and the value in the question's
// unit.
struct TypedNumber {
  double number = 0;
  std::string written_unit;
  double value = 0;
};

std::optional<double> unit_factor(std::string_view written, std::string_view unit) {
  if (unit == "bytes") {
    if (written.empty()) return 1.0;
    const std::optional<units::ByteUnit> byte_unit = units::parse_byte_unit(written);
    return byte_unit ? std::optional(byte_unit->bytes()) : std::nullopt;
  }
  const auto table = conversions(unit);
  const auto it = table.find(lower(written));
  return it == table.end() ? std::nullopt : std::optional(it->second);
}

std::optional<TypedNumber> read_number(std::string_view typed, std::string_view unit,
                                       std::string* why) {
  const auto fail = [&](std::string reason) -> std::optional<TypedNumber> {
    if (why != nullptr) *why = std::move(reason);
    return std::nullopt;
  };
  std::string number;
  size_t i = 0;
  const std::string text = trim(typed);
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ',') continue;  // thousands separators
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+' ||
        ((c == 'e' || c == 'E') && !number.empty() && i + 1 < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '-'))) {
      number += c;
    } else {
      break;
    }
  }
  double value = 0;
  const char* first = number.data() + (number.starts_with('+') ? 1 : 0);
  const auto [end, error] = std::from_chars(first, number.data() + number.size(), value);
  if (number.empty() || error != std::errc() || end != number.data() + number.size() ||
      !std::isfinite(value)) {
    return fail("'" + text + "' is not a number");
  }
  const std::string written = trim(text.substr(i));
  const std::optional<double> factor = unit_factor(written, unit);
  if (!factor) return fail("'" + lower(written) + "' is not a unit of " + std::string(unit));
  return TypedNumber{value, written, value * *factor};
}

// Whether `value` would count as `expected`; hints use at least a hair of tolerance, so an
// exact question still recognises 500 KB x 1.024 as 512,000 bytes.
bool matches(double value, double expected, double allowed) {
  return std::fabs(value - expected) <= std::max(allowed, 1e-9 * std::fabs(expected));
}

std::string bytes_text(double bytes) { return format_number(bytes, 2) + " bytes"; }

// "KB means 1,000 bytes, KiB 1,024": the learner's unit as written, then its counterpart.
std::string unit_meanings(const std::string& written, const units::ByteUnit& typed,
                          const units::ByteUnit& other) {
  return written + " means " + bytes_text(typed.bytes()) + ", " + std::string(other.symbol) + " " +
         format_number(other.bytes());
}

// The learner wrote a decimal unit where the binary one was meant, or the other way round:
// "your 500 KB is 500,000 bytes; the answer is 512,000 bytes = 500 KiB: KB means 1,000 bytes,
// KiB 1,024".
std::optional<std::string> unit_system_slip(const TypedNumber& typed, double expected,
                                            double allowed) {
  const std::optional<units::ByteUnit> unit = units::parse_byte_unit(typed.written_unit);
  if (!unit || unit->power == 0) return std::nullopt;
  const units::ByteUnit other = units::counterpart(*unit);
  if (!matches(typed.number * other.bytes(), expected, allowed)) return std::nullopt;
  return "your " + format_number(typed.number, 6) + " " + typed.written_unit + " is " +
         bytes_text(typed.value) + "; the answer is " + bytes_text(expected) + " = " +
         format_significant(expected / other.bytes()) + " " + std::string(other.symbol) + ": " +
         unit_meanings(typed.written_unit, *unit, other);
}

// The learner's bytes are off by (1024/1000)^k: a 1000 where a 1024 belongs, or the reverse,
// somewhere in the working.
std::optional<std::string> thousand_for_1024_slip(const TypedNumber& typed, double expected,
                                                  double allowed) {
  for (int power = 1; power <= 3; ++power) {
    const double factor = std::pow(1.024, power);
    const std::string factor_text =
        power == 1 ? "1024/1000" : "(1024/1000)^" + std::to_string(power);
    const std::string head = "your " + bytes_text(typed.value) + " is the answer, " +
                             format_quantity(expected, "bytes") + ", ";
    if (matches(typed.value * factor, expected, allowed)) {
      return head + "divided by " + factor_text +
             ": a 1000 where a 1024 belongs (kB means 1,000 bytes, KiB 1,024)";
    }
    if (matches(typed.value / factor, expected, allowed)) {
      return head + "times " + factor_text +
             ": a 1024 where a 1000 belongs (KiB means 1,024 bytes, kB 1,000)";
    }
  }
  return std::nullopt;
}

// Half or twice the answer: a factor of 2 missing or extra (keys and values, bytes per F16).
std::optional<std::string> factor_of_two_slip(const TypedNumber& typed, double expected,
                                              double allowed, std::string_view unit) {
  const std::string head = "your " + format_quantity(typed.value, unit) + " is ";
  const std::string answer = format_quantity(expected, unit);
  if (matches(typed.value * 2, expected, allowed)) {
    return head + "half the answer, " + answer + ": a factor of 2 is missing";
  }
  if (matches(typed.value / 2, expected, allowed)) {
    return head + "twice the answer, " + answer + ": a factor of 2 too many";
  }
  return std::nullopt;
}

// The one slip a wrong answer shows, if it shows one: 1000 against 1024, then a factor of 2.
std::optional<std::string> slip(const TypedNumber& typed, double expected, double allowed,
                                std::string_view unit) {
  if (unit == "bytes") {
    if (auto hint = unit_system_slip(typed, expected, allowed)) return hint;
    if (auto hint = thousand_for_1024_slip(typed, expected, allowed)) return hint;
  }
  return factor_of_two_slip(typed, expected, allowed, unit);
}

}  // namespace

std::optional<double> parse_number_answer(std::string_view typed, std::string_view unit,
                                          std::string* why) {
  const std::optional<TypedNumber> read = read_number(typed, unit, why);
  return read ? std::optional(read->value) : std::nullopt;
}

AnswerResult check_choice(const Question& question, int64_t chosen) {
  AnswerResult result;
  const int64_t right = question.choice_answer.value_or(-1);
  result.correct = chosen == right;
  result.score = result.correct ? 1 : 0;
  const bool in_range = right >= 0 && right < static_cast<int64_t>(question.options.size());
  result.feedback = result.correct ? "Right."
                    : in_range     ? "Not quite: the answer is \"" +
                                     question.options[static_cast<size_t>(right)] + "\"."
                               : "Not quite.";
  return result;
}

AnswerResult check_number(double expected, double tolerance, std::string_view unit,
                          std::string_view typed) {
  AnswerResult result;
  std::string why;
  const std::optional<TypedNumber> given = read_number(typed, unit, &why);
  if (!given) {
    result.feedback =
        why + "; type a number, e.g. " + format_number(expected) + " " + std::string(unit);
    return result;
  }
  const double allowed = expected == 0 ? tolerance : tolerance * std::fabs(expected);
  result.correct = std::fabs(given->value - expected) <= allowed;
  result.score = result.correct ? 1 : 0;
  const std::string answer = format_quantity(expected, unit);
  if (result.correct) {
    result.feedback = "Right: " + answer + ".";
  } else if (const std::optional<std::string> hint = slip(*given, expected, allowed, unit)) {
    result.feedback = "Not quite: " + *hint + ".";
  } else {
    result.feedback = "Not quite: " + format_quantity(given->value, unit) + " against " + answer +
                      " (within " + format_significant(tolerance * 100) + "% counts).";
  }
  return result;
}

AnswerResult check_number(const Question& question, const GeneratedAnswer* generated,
                          std::string_view typed) {
  const double tolerance = question.tolerance.value_or(0);
  if (question.generated()) {
    if (generated == nullptr) {
      return {false, 0, "This question is computed from the loaded model; load a model first."};
    }
    return check_number(generated->value, tolerance, question.unit, typed);
  }
  return check_number(question.number_answer.value_or(0), tolerance, question.unit, typed);
}

AnswerResult self_marked(const Question& question, const std::vector<bool>& ticked) {
  AnswerResult result;
  const size_t total = question.self_check.size();
  const auto count = static_cast<size_t>(std::count(ticked.begin(), ticked.end(), true));
  const size_t hits = std::min(count, total);
  result.score = total == 0 ? 0 : static_cast<double>(hits) / static_cast<double>(total);
  result.correct = total > 0 && hits == total;
  result.feedback = std::to_string(hits) + " of " + std::to_string(total) +
                    " points covered; compare with the model answer.";
  return result;
}

}  // namespace servescope::lessons
