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

// Written units that convert to the question's unit, with the factor to multiply by.
std::map<std::string, double> conversions(std::string_view unit) {
  const std::string u = lower(unit);
  std::map<std::string, double> table = {{"", 1.0}, {u, 1.0}};
  if (u == "bytes") {
    table.insert({{"b", 1.0},
                  {"byte", 1.0},
                  {"kib", 1024.0},
                  {"mib", 1024.0 * 1024},
                  {"gib", 1024.0 * 1024 * 1024},
                  {"kb", 1e3},
                  {"mb", 1e6},
                  {"gb", 1e9}});
  } else if (u == "ms") {
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

}  // namespace

std::optional<double> parse_number_answer(std::string_view typed, std::string_view unit,
                                          std::string* why) {
  const auto fail = [&](std::string reason) -> std::optional<double> {
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
  const std::string written = lower(trim(text.substr(i)));
  const auto table = conversions(unit);
  const auto it = table.find(written);
  if (it == table.end()) {
    return fail("'" + written + "' is not a unit of " + std::string(unit));
  }
  return value * it->second;
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
  const std::optional<double> given = parse_number_answer(typed, unit, &why);
  if (!given) {
    result.feedback =
        why + "; type a number, e.g. " + format_number(expected) + " " + std::string(unit);
    return result;
  }
  const double allowed = expected == 0 ? tolerance : tolerance * std::fabs(expected);
  result.correct = std::fabs(*given - expected) <= allowed;
  result.score = result.correct ? 1 : 0;
  const std::string answer = format_quantity(expected, unit);
  result.feedback = result.correct
                        ? "Right: " + answer + "."
                        : "Not quite: " + format_quantity(*given, unit) + " against " + answer +
                              " (within " + format_significant(tolerance * 100) + "% counts).";
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
