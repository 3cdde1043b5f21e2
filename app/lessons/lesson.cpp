#include "app/lessons/lesson.h"

#include <algorithm>

#include "app/lessons/format.h"

namespace servescope::lessons {

int64_t Action::field_integer(const std::string& field, int64_t fallback) const {
  const auto it = fields.find(field);
  return it == fields.end() ? fallback : it->second.integer;
}

std::string Action::field_text(const std::string& field, const std::string& fallback) const {
  const auto it = fields.find(field);
  return it == fields.end() ? fallback : it->second.text;
}

int Step::line_of(const std::string& field) const {
  const auto it = field_lines.find(field);
  return it == field_lines.end() ? line : it->second;
}

int Question::line_of(const std::string& field) const {
  const auto it = field_lines.find(field);
  return it == field_lines.end() ? line : it->second;
}

int Lesson::line_of(const std::string& field) const {
  const auto it = field_lines.find(field);
  return it == field_lines.end() ? line : it->second;
}

int64_t Lesson::experiment_count() const {
  return std::count_if(steps.begin(), steps.end(), [](const Step& s) { return !s.run.empty(); });
}

int64_t Lesson::generated_question_count() const {
  return std::count_if(questions.begin(), questions.end(),
                       [](const Question& q) { return q.generated(); });
}

std::string Problem::to_string() const {
  return file + ":" + std::to_string(line) + ": " + message;
}

std::string_view question_kind_name(QuestionKind kind) {
  switch (kind) {
    case QuestionKind::kChoice:
      return "choice";
    case QuestionKind::kNumber:
      return "number";
    case QuestionKind::kExplain:
      return "explain";
  }
  return "?";
}

std::string prediction_text(const Prediction& asked, double value) {
  if (asked.kind == PredictionKind::kNumber) return format_quantity(value, asked.unit);
  if (!(value >= 0 && value < static_cast<double>(asked.options.size()))) return {};
  return asked.options[static_cast<size_t>(value)];
}

}  // namespace servescope::lessons
