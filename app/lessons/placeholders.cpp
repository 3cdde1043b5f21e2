#include "app/lessons/placeholders.h"

#include <algorithm>
#include <cmath>

#include "app/lessons/format.h"
#include "app/lessons/vocabulary.h"
#include "engine/model/model_config.h"

namespace servescope::lessons {
namespace {

std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t");
  return std::string(s.substr(first, last - first + 1));
}

std::string format_calc(double value) {
  return value == std::floor(value) ? format_number(value) : format_significant(value);
}

std::string count(int64_t n) { return format_number(static_cast<double>(n)); }

std::optional<std::string> lookup(const PlaceholderRef& ref, const FillContext& c) {
  if (ref.space == "answer") return c.answer;
  if (ref.space == "model") {
    return c.model != nullptr ? model_value(*c.model, ref.name) : std::nullopt;
  }
  if (ref.space == "measure" && c.measured != nullptr) {
    // {{measure.static.ttft_ms}}: a kept measure, in the unit of the measure it kept.
    const auto it = c.measured->find(ref.name);
    const MeasureSpec* spec = find_measure(kept_measure(ref.name));
    if (it == c.measured->end() || spec == nullptr) return std::nullopt;
    return format_quantity(it->second, spec->unit);
  }
  if (ref.space == "param" && c.generated != nullptr) {
    const auto it = c.generated->params.find(ref.name);
    if (it != c.generated->params.end()) return it->second;
  }
  if (ref.space == "calc" && c.generated != nullptr) {
    const auto it = c.generated->calc.find(ref.name);
    if (it != c.generated->calc.end()) return format_calc(it->second);
  }
  return std::nullopt;
}

}  // namespace

std::string_view kept_measure(std::string_view name) {
  const size_t dot = name.rfind('.');
  return dot == std::string_view::npos ? name : name.substr(dot + 1);
}

std::vector<PlaceholderRef> find_placeholders(std::string_view text) {
  std::vector<PlaceholderRef> refs;
  size_t pos = 0;
  while ((pos = text.find("{{", pos)) != std::string_view::npos) {
    const size_t end = text.find("}}", pos + 2);
    if (end == std::string_view::npos) break;
    PlaceholderRef ref;
    ref.offset = pos;
    ref.length = end + 2 - pos;
    ref.written = std::string(text.substr(pos, ref.length));
    const std::string inner = trim(text.substr(pos + 2, end - pos - 2));
    const size_t dot = inner.find('.');
    ref.space = dot == std::string::npos ? inner : inner.substr(0, dot);
    ref.name = dot == std::string::npos ? std::string() : inner.substr(dot + 1);
    ref.line_offset = static_cast<int>(
        std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
    refs.push_back(std::move(ref));
    pos = end + 2;
  }
  return refs;
}

std::optional<std::string> model_value(const ModelFacts& model, std::string_view name) {
  const model::ModelConfig& c = model.config;
  if (name == "name") return model.name;
  if (name == "layers") return count(c.n_layers);
  if (name == "heads") return count(c.n_heads);
  if (name == "kv_heads") return count(c.n_kv_heads);
  if (name == "head_dim") return count(c.head_dim);
  if (name == "dim") return count(c.dim);
  if (name == "ffn_dim") return count(c.ffn_dim);
  if (name == "vocab") return count(c.vocab_size);
  if (name == "output") {
    return c.tied_output ? "no output matrix of its own: the logits reuse the embedding table"
                         : "a separate output matrix of vocabulary x embedding width";
  }
  if (name == "context") return count(c.context_length);
  if (name == "weight_bytes")
    return format_quantity(static_cast<double>(model.weight_bytes), "bytes");
  if (name == "weight_type") return model.weight_type;
  return std::nullopt;
}

FilledText fill_placeholders(std::string_view text, const FillContext& context) {
  FilledText filled;
  size_t copied = 0;
  for (const PlaceholderRef& ref : find_placeholders(text)) {
    filled.text.append(text.substr(copied, ref.offset - copied));
    const std::optional<std::string> value = lookup(ref, context);
    if (value) {
      filled.text += *value;
    } else {
      filled.text += '?';
      filled.missing.push_back(ref.written);
    }
    copied = ref.offset + ref.length;
  }
  filled.text.append(text.substr(copied));
  return filled;
}

std::optional<std::string> answer_text(const Question& question, const GeneratedAnswer* generated) {
  switch (question.kind) {
    case QuestionKind::kChoice:
      if (question.choice_answer && *question.choice_answer >= 0 &&
          *question.choice_answer < static_cast<int64_t>(question.options.size())) {
        return question.options[static_cast<size_t>(*question.choice_answer)];
      }
      return std::nullopt;
    case QuestionKind::kNumber:
      if (question.generated()) {
        if (generated == nullptr) return std::nullopt;
        return format_quantity(generated->value, generated->unit);
      }
      if (!question.number_answer) return std::nullopt;
      return format_quantity(*question.number_answer, question.unit);
    case QuestionKind::kExplain:
      return question.model_answer;
  }
  return std::nullopt;
}

}  // namespace servescope::lessons
