// A step's expect conditions: the language parses what lessons write, refuses the rest with a
// column, and evaluates against a step's measures (medians and spreads) and earlier steps'.
#include "app/lessons/expectation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "app/lessons/lesson_loader.h"
#include "app/lessons/lesson_validator.h"

namespace servescope::lessons {
namespace {

using testing::HasSubstr;

Sample one(double v) { return {v, v, v, 1}; }
Sample spread(double median, double low, double high) { return {median, low, high, 3}; }

struct Fixture {
  StepMeasures current;
  std::map<std::string, StepMeasures> earlier;

  ConditionResult check(const std::string& written) const {
    ParsedExpression parsed = parse_expression(written);
    EXPECT_TRUE(parsed.expression) << written << ": " << parsed.error;
    const Expectation e{written, 1, parsed.expression};
    return evaluate(e, {&current, &earlier});
  }
};

TEST(Expectation, SummariseGivesTheMedianAndTheRange) {
  const Sample odd = summarise({5.0, 1.0, 3.0});
  EXPECT_EQ(odd.median, 3.0);
  EXPECT_EQ(odd.low, 1.0);
  EXPECT_EQ(odd.high, 5.0);
  EXPECT_EQ(odd.runs, 3);
  EXPECT_EQ(summarise({4.0, 1.0, 2.0, 3.0}).median, 2.5);
  EXPECT_EQ(summarise({7.0}).median, 7.0);
}

TEST(Expectation, ComparesMeasuresOfThisAndEarlierSteps) {
  Fixture f;
  f.current["kv_bytes"] = one(272000);
  f.current["evictions"] = one(0);
  f.earlier["what-it-stores"]["kv_bytes"] = one(136000);
  const ConditionResult doubled = f.check("kv_bytes == 2 * steps.what-it-stores.kv_bytes");
  EXPECT_EQ(doubled.passed, true);
  EXPECT_EQ(doubled.value, 272000.0);
  EXPECT_THAT(doubled.detail, HasSubstr("272000 == 272000"));
  EXPECT_EQ(f.check("evictions > 0").passed, false);
  EXPECT_EQ(f.check("evictions > 0 or kv_bytes >= 1e5").passed, true);
  EXPECT_EQ(f.check("not evictions and kv_bytes / 1000 - 72 == 200").passed, true);
  EXPECT_EQ(f.check("-(kv_bytes) < 0").passed, true);
  EXPECT_EQ(f.check("within(kv_bytes, 270000, 0.01)").passed, true);
  EXPECT_EQ(f.check("within(kv_bytes, 250000, 0.01)").passed, false);
  EXPECT_EQ(f.check("kv_bytes").passed, true);  // a bare measure: true when non-zero
  EXPECT_EQ(f.check("evictions").passed, false);
}

TEST(Expectation, AMeasureNotMeasuredLeavesTheClaimUnchecked) {
  Fixture f;
  f.current["kv_bytes"] = one(1);
  const ConditionResult r = f.check("kv_bytes < steps.earlier.kv_bytes");
  EXPECT_FALSE(r.passed.has_value());
  EXPECT_THAT(r.detail, HasSubstr("steps.earlier.kv_bytes was not measured"));
  EXPECT_FALSE(f.check("preemptions > 0").passed.has_value());
  EXPECT_EQ(f.check("kv_bytes / 0 > 1").passed, false);  // division by zero: does not hold
}

TEST(Expectation, ClearlyGreaterNeedsRangesThatDoNotOverlap) {
  Fixture f;
  f.current["decode_ms_per_token"] = spread(2.0, 1.8, 2.4);
  f.current["prefill_ms_per_token"] = spread(0.5, 0.4, 0.7);
  f.current["tpot_ms"] = spread(1.9, 1.5, 2.0);
  EXPECT_EQ(f.check("clearly_greater(decode_ms_per_token, prefill_ms_per_token)").passed, true);
  // Medians 2.0 > 1.9, but the runs overlap: inside the noise.
  EXPECT_EQ(f.check("decode_ms_per_token > tpot_ms").passed, true);
  const ConditionResult noise = f.check("clearly_greater(decode_ms_per_token, tpot_ms)");
  EXPECT_EQ(noise.passed, false);
  EXPECT_THAT(noise.detail, HasSubstr("2 (1.8..2.4), 1.9 (1.5..2)"));
  // Arithmetic carries the spread: 3 x [0.4, 0.7] reaches 2.1, above decode's low 1.8.
  EXPECT_EQ(f.check("clearly_greater(decode_ms_per_token, 3 * prefill_ms_per_token)").passed,
            false);
  EXPECT_EQ(f.check("clearly_greater(decode_ms_per_token, 2 * prefill_ms_per_token)").passed,
            true);
}

TEST(Expectation, ParseErrorsSayWhatAndWhere) {
  const auto error = [](const char* text) { return parse_expression(text).error; };
  EXPECT_EQ(error("kv_bytes = 2"), "'=' is not a comparison; write '==' at column 10");
  EXPECT_THAT(error("kv_bytes > "), HasSubstr("ends too early"));
  EXPECT_THAT(error("1 < kv_bytes < 3"), HasSubstr("do not chain"));
  EXPECT_THAT(error("system(1)"), HasSubstr("'system' is not a function"));
  EXPECT_THAT(error("within(a, b)"), HasSubstr("within takes 3 arguments, not 2"));
  EXPECT_THAT(error("steps.x"), HasSubstr("expected '.' and a measure after the step id"));
  EXPECT_THAT(error("(kv_bytes > 1"), HasSubstr("expected ')'"));
  EXPECT_THAT(error("kv_bytes > 1 $"), HasSubstr("unexpected '$' at column 14"));
  EXPECT_THAT(error("and kv_bytes"), HasSubstr("'and' needs a value before it"));
  EXPECT_TRUE(error("kv_bytes >= 2*steps.a-b.kv_bytes and (x or not y)").empty());
}

TEST(Expectation, NamesReadAreListedInOrder) {
  const ParsedExpression p = parse_expression("kv_bytes == 2 * steps.first.kv_tokens + within(a, b, 0.1)");
  ASSERT_TRUE(p.expression);
  std::vector<std::string> names;
  for (const NameRef& n : names_read(*p.expression)) names.push_back(n.written());
  EXPECT_THAT(names, testing::ElementsAre("kv_bytes", "steps.first.kv_tokens", "a", "b"));
}

constexpr const char* kLesson = R"(id: sample
number: 7
title: T
objectives: [b]
summary: S.
steps:
  - id: first
    title: First
    text: Run.
    run:
      - generate: {max_tokens: 10}
    repeat: 3
    expect:
      - kv_bytes > 0
      - kv_bytes = 1
      - kv_bytes > steps.later.kv_bytes
      - kv_bytes > steps.first.kv_bytes
      - warp_factor > 1
    explain_if_not: Measured {{measure.kv_bytes}}.
  - id: later
    title: Later
    text: More.
    expect:
      - kv_bytes == 2 * steps.first.kv_bytes
    repeat: 12
  - id: no-expect
    title: N
    text: N.
    explain_if_not: Nothing to explain.
)";

std::vector<std::string> problems_of(const char* text) {
  LoadResult loaded = load_lesson_text(text, "07-sample.yaml");
  std::vector<std::string> lines;
  for (const Problem& p : loaded.problems) lines.push_back(p.to_string());
  if (loaded.lesson) {
    for (const Problem& p : validate_lesson(*loaded.lesson)) lines.push_back(p.to_string());
  }
  return lines;
}

TEST(Expectation, TheLoaderAndValidatorReportEachBadConditionAtItsLine) {
  const std::vector<std::string> problems = problems_of(kLesson);
  using testing::Contains;
  EXPECT_THAT(problems, Contains("07-sample.yaml:15: expect 'kv_bytes = 1': '=' is not a "
                                 "comparison; write '==' at column 10"));
  EXPECT_THAT(problems, Contains("07-sample.yaml:16: expect 'kv_bytes > steps.later.kv_bytes': "
                                 "steps.later.kv_bytes names no earlier step of this lesson"));
  EXPECT_THAT(problems, Contains("07-sample.yaml:17: expect 'kv_bytes > steps.first.kv_bytes': "
                                 "steps.first.kv_bytes names no earlier step of this lesson"));
  EXPECT_THAT(problems, Contains("07-sample.yaml:18: expect 'warp_factor > 1': warp_factor names "
                                 "no measure (see lessons/README.md)"));
  EXPECT_THAT(problems, Contains(HasSubstr(":25: step 'later': repeat 12 is outside 1..9")));
  EXPECT_THAT(problems,
              Contains(HasSubstr(":29: step 'no-expect': explain_if_not needs expect conditions")));
  EXPECT_EQ(problems.size(), 6u) << testing::PrintToString(problems);
}

TEST(Expectation, TheLoaderKeepsConditionsRepeatAndTheOtherExplanation) {
  LoadResult loaded = load_lesson_text(kLesson, "07-sample.yaml");
  ASSERT_TRUE(loaded.lesson);
  const Step& first = loaded.lesson->steps[0];
  EXPECT_EQ(first.repeat, 3);
  ASSERT_EQ(first.expect.size(), 5u);
  EXPECT_EQ(first.expect[0].written, "kv_bytes > 0");
  EXPECT_EQ(first.expect[0].line, 14);
  EXPECT_TRUE(first.expect[0].expression);
  EXPECT_FALSE(first.expect[1].expression);
  EXPECT_EQ(first.explain_if_not, "Measured {{measure.kv_bytes}}.");
  EXPECT_EQ(loaded.lesson->steps[2].repeat, 1);
}

}  // namespace
}  // namespace servescope::lessons
