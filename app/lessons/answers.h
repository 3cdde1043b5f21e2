// Marking a learner's answer: a choice by index, a number (typed with or without a unit,
// converted to the question's unit) within the question's relative tolerance, an explanation
// by the learner's own ticks against the self-check list.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/lessons/generators.h"
#include "app/lessons/lesson.h"

namespace servescope::lessons {

struct AnswerResult {
  bool correct = false;
  double score = 0;      // 0..1
  std::string feedback;  // one line for the learner
};

// The number in `typed`, converted to `unit`: "272,000", "272000 bytes", "265.6 KiB",
// "0.26 MiB", "1.85ms", "0.00185 s", "2x". nullopt, with the reason in `why`, when it is not a
// number or its unit does not convert to `unit`.
std::optional<double> parse_number_answer(std::string_view typed, std::string_view unit,
                                          std::string* why = nullptr);

AnswerResult check_choice(const Question& question, int64_t chosen);

// Right when |given - expected| <= tolerance x |expected| (for expected 0: |given| <= tolerance).
AnswerResult check_number(double expected, double tolerance, std::string_view unit,
                          std::string_view typed);
// The question's answer: its fixed one, or `generated`'s value for a generated question.
// A generated question without `generated` cannot be marked: feedback says so.
AnswerResult check_number(const Question& question, const GeneratedAnswer* generated,
                          std::string_view typed);

// An explain question, self-marked: the score is the share of self-check items ticked;
// correct when all are.
AnswerResult self_marked(const Question& question, const std::vector<bool>& ticked);

}  // namespace servescope::lessons
