// A lesson as loaded from its YAML file (lessons/README.md is the format's reference): steps
// that predict, run, observe and explain; practice questions; flashcards. Plain data: the
// loader fills it, the validator checks it, the window shows and runs it. Every element keeps
// the line it came from, so a problem found later still points into the file.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/lessons/expectation.h"

namespace servescope::lessons {

// One argument value of an action, typed by the action's vocabulary entry (vocabulary.h):
// a choice or free text in `text`, a whole number in `integer`, a flag in `flag`, a list in
// `items`.
struct ArgValue {
  std::string text;
  int64_t integer = 0;
  bool flag = false;
  std::vector<std::string> items;
};

// A declarative instruction for the window, e.g. `set_kv_type: q8_0` or
// `generate: {max_tokens: 100}`. Actions with a single argument use `value`; actions whose
// argument is a mapping use `fields` (only the fields written in the file are present).
struct Action {
  std::string name;
  ArgValue value;
  std::map<std::string, ArgValue> fields;
  int line = 0;

  // The field's whole number, or `fallback` when the file did not give it.
  int64_t field_integer(const std::string& field, int64_t fallback) const;
  // The field's text, or `fallback` when the file did not give it.
  std::string field_text(const std::string& field, const std::string& fallback = {}) const;
};

enum class PredictionKind { kChoice, kNumber };

// What the learner commits to before the run. A number prediction is not graded; the
// observe list shows the measured value beside it.
struct Prediction {
  PredictionKind kind = PredictionKind::kChoice;
  std::string prompt;                // Markdown
  std::vector<std::string> options;  // kChoice
  std::string unit;                  // kNumber
  int line = 0;
};

// A measured quantity shown after the run (a name from the measure vocabulary).
struct Observation {
  std::string measure;
  std::string label;
  int line = 0;
};

struct Step {
  std::string id;
  std::string title;
  std::string text;  // Markdown
  std::optional<Prediction> predict;
  std::vector<Action> run;
  std::vector<Observation> observe;
  std::string explain;  // Markdown with placeholders
  // What the explanation claims, checked after the run; and the Markdown shown after
  // `explain` when a claim does not hold on this machine (what it measured, and why).
  std::vector<Expectation> expect;
  std::string explain_if_not;
  // Runs of the experiment: its measures are then the median with min..max (timings that
  // are compared are noisy; a difference inside the spread is not claimed).
  int64_t repeat = 1;
  int line = 0;
  std::map<std::string, int> field_lines;  // key -> line

  int line_of(const std::string& field) const;
};

enum class QuestionKind { kChoice, kNumber, kExplain };

// Actions that run a generated question for real, and the measure that must then equal the
// generated answer.
struct Confirmation {
  std::vector<Action> run;
  std::string measure;
  int line = 0;
};

struct Question {
  std::string id;
  QuestionKind kind = QuestionKind::kChoice;
  std::string prompt;  // Markdown with placeholders
  // kChoice
  std::vector<std::string> options;
  std::optional<int64_t> choice_answer;  // index into options
  // kNumber: a fixed answer, or a generator computing it from the loaded model
  std::optional<double> number_answer;
  std::string generator;                      // empty: not generated
  std::map<std::string, std::string> params;  // generator parameters, as written
  int params_line = 0;
  std::string unit;
  std::optional<double> tolerance;  // relative, e.g. 0.02
  std::optional<Confirmation> confirm;
  // kExplain
  std::string model_answer;
  std::vector<std::string> self_check;
  // every kind: the full working, shown after answering (placeholders allowed)
  std::string working;
  int line = 0;
  // Lines of individual fields, for problems found after loading (field name -> line).
  std::map<std::string, int> field_lines;

  bool generated() const { return !generator.empty(); }
  int line_of(const std::string& field) const;
};

struct Flashcard {
  std::string id;
  std::string front;
  std::string back;
  int line = 0;
};

struct Lesson {
  std::string file;  // the path it was loaded from, as given
  std::string id;
  int64_t number = -1;
  std::string title;
  std::vector<std::string> objectives;  // "a", "b", "c"
  std::string summary;
  std::string intro;  // Markdown
  std::vector<Step> steps;
  std::vector<Question> questions;
  std::vector<Flashcard> flashcards;
  int line = 1;
  std::map<std::string, int> field_lines;  // top-level key -> line

  int line_of(const std::string& field) const;
  // Steps that run something: the lesson's experiments.
  int64_t experiment_count() const;
  int64_t generated_question_count() const;
};

// "FILE:LINE: what is wrong". Lines count from 1; 0 means the file as a whole.
struct Problem {
  std::string file;
  int line = 0;
  std::string message;

  std::string to_string() const;
};

std::string_view question_kind_name(QuestionKind kind);

// A prediction as the step shows it: the chosen option's text (`value` its index), or the
// number with its unit; empty for an option index out of range.
std::string prediction_text(const Prediction& asked, double value);

}  // namespace servescope::lessons
