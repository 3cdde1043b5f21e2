// {{namespace.name}} placeholders in lesson Markdown, and filling them with numbers:
// {{model.layers}} from the loaded model, {{measure.kv_bytes}} from what was just measured,
// {{param.tokens}} / {{calc.bytes_per_token}} from a generated question, {{answer}}.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/lessons/generators.h"
#include "app/lessons/lesson.h"
#include "app/lessons/model_facts.h"

namespace servescope::lessons {

struct PlaceholderRef {
  std::string space;    // model, measure, param, calc; "answer" for {{answer}}
  std::string name;     // empty for {{answer}}
  std::string written;  // as in the text, braces included
  size_t offset = 0;
  size_t length = 0;
  int line_offset = 0;  // newlines before it in the text
};

// The measure a {{measure.NAME}} shows: NAME, or for a kept one (static.ttft_ms) the part
// after the dot.
std::string_view kept_measure(std::string_view name);

// Every {{...}} in the text. Whitespace inside the braces is allowed: {{ model.layers }}.
std::vector<PlaceholderRef> find_placeholders(std::string_view text);

// The model's value for {{model.NAME}}, formatted; nullopt for an unknown name.
std::optional<std::string> model_value(const ModelFacts& model, std::string_view name);

// Where the values come from; any may be absent (then its placeholders are missing).
struct FillContext {
  const ModelFacts* model = nullptr;
  const Measurements* measured = nullptr;
  const GeneratedAnswer* generated = nullptr;  // {{param.*}}, {{calc.*}}
  std::optional<std::string> answer;           // {{answer}}, already formatted
};

struct FilledText {
  std::string text;
  std::vector<std::string> missing;  // placeholders left as "?" (written form)
};

FilledText fill_placeholders(std::string_view text, const FillContext& context);

// The answer as {{answer}} shows it: the chosen option's text, the number with its unit (the
// generated value for a generated question; nullopt when it is generated and `generated` is
// null), or the model answer of an explain question.
std::optional<std::string> answer_text(const Question& question,
                                       const GeneratedAnswer* generated = nullptr);

}  // namespace servescope::lessons
