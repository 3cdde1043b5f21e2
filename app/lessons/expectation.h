// A step's `expect:` conditions: what its explanation claims, written as a small expression
// over what the step measured (lessons/README.md, "Expectations"). They are parsed when the
// lesson loads (a typo is a FILE:LINE problem, never a silently passing claim) and evaluated
// after the step's run, in the window and in `servescope --run-lessons`.
//
//   kv_bytes == 2 * steps.what-it-stores.kv_bytes
//   evictions > 0 or preemptions > 0
//   clearly_greater(decode_ms_per_token, prefill_ms_per_token)
//
// The language: numbers, measure names, `steps.<step-id>.<measure>` (an earlier step's
// measure), `<kept>.<measure>` (a measure the step's `keep: <kept>` action took), + - * /,
// parentheses, the comparisons < <= > >= == !=, and / or / not, and the functions
// within(a, b, rel), clearly_greater(a, b) (every run of a above every run of b) and
// inside_noise(a, b) (the runs' ranges overlap). A bare measure is true when non-zero.
// Nothing else: no assignment, no loops, no calls outside that list.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace servescope::lessons {

// One measure over the runs of a step (`repeat: N`): the median and the spread. One run: all
// three are the same number.
struct Sample {
  double median = 0.0;
  double low = 0.0;
  double high = 0.0;
  int runs = 1;

  bool operator==(const Sample&) const = default;
};

// The median (the mean of the middle two for an even count) and min..max; `values` not empty.
Sample summarise(std::vector<double> values);

using StepMeasures = std::map<std::string, Sample>;  // measure name -> sample

// A name an expression reads: a measure of the step itself, of an earlier step (`step`), or
// one the step kept under a name (`kept`). At most one of step and kept is set.
struct NameRef {
  std::string step;
  std::string kept;
  std::string measure;

  // "kv_bytes", "steps.predict-double.kv_bytes" or "continuous.ttft_ms"; a step's kept
  // measures are stored under this name too.
  std::string written() const;
};

struct Expression;  // the parsed form; see expectation.cpp

struct Expectation {
  std::string written;  // as in the file: the condition's name in every report
  int line = 0;
  std::shared_ptr<const Expression> expression;  // null when it did not parse
};

struct ParsedExpression {
  std::shared_ptr<const Expression> expression;  // null on error
  std::string error;                             // "expected ')' at column 12", ...
};

ParsedExpression parse_expression(std::string_view text);

// Every name the expression reads, in the order written.
std::vector<NameRef> names_read(const Expression& expression);

// What a condition's names are looked up in.
struct ExpectationInputs {
  const StepMeasures* current = nullptr;                      // this step's measures
  const std::map<std::string, StepMeasures>* earlier = nullptr;  // step id -> its measures
};

struct ConditionResult {
  std::string condition;        // as written
  std::optional<double> value;  // the left side of its comparison (or first argument), median
  // false: the claim does not hold here; nullopt: a name it reads was not measured, so the
  // claim could not be checked (the runner counts that as a failure, the window says why).
  std::optional<bool> passed;
  std::string detail;  // the figures compared, or what was not measured
};

ConditionResult evaluate(const Expectation& expectation, const ExpectationInputs& inputs);

}  // namespace servescope::lessons
