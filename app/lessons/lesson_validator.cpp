#include "app/lessons/lesson_validator.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "app/lessons/format.h"
#include "app/lessons/generators.h"
#include "app/lessons/placeholders.h"
#include "app/lessons/vocabulary.h"
#include "engine/core/error.h"

namespace servescope::lessons {
namespace {

// Whether the word after a measure's placeholder (past any ** and spaces) is the unit it is
// filled with, so the reader sees it twice.
bool unit_written_after(const std::string& text, const PlaceholderRef& ref, std::string_view unit) {
  size_t at = ref.offset + ref.length;
  while (at < text.size() && (text[at] == '*' || std::isspace(static_cast<unsigned char>(text[at]))))
    ++at;
  size_t end = at;
  while (end < text.size() && (std::isalpha(static_cast<unsigned char>(text[end])) || text[end] == '/'))
    ++end;
  return end > at && !unit.empty() && std::isalpha(static_cast<unsigned char>(unit.front())) &&
         std::string_view(text).substr(at, end - at) == unit;
}

constexpr double kMaxTolerance = 0.5;
constexpr int64_t kMaxRepeat = 9;  // runs of one step: enough for a median, short enough to wait
const std::vector<std::string> kObjectives = {"a", "b", "c"};

bool is_id(const std::string& id) {
  return !id.empty() && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

bool is_blank(const std::string& text) {
  return text.find_first_not_of(" \t\r\n") == std::string::npos;
}

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// Which placeholders a text may use.
struct Allowed {
  bool measure = false;
  std::set<std::string> kept;  // {{measure.KEPT.NAME}}: names the step's keep actions take
  const GeneratorSpec* generator = nullptr;  // {{param.*}} and {{calc.*}}
  bool answer = false;
};

class Checker {
 public:
  Checker(const Lesson& lesson, const ModelFacts* model) : lesson_(lesson), model_(model) {}

  std::vector<Problem> run() {
    check_header();
    bool measured = false;  // a step so far ran something
    std::set<std::string> step_ids;
    for (const Step& step : lesson_.steps) {
      measured = measured || !step.run.empty();
      check_step(step, measured, step_ids);
    }
    std::set<std::string> question_ids;
    for (const Question& q : lesson_.questions) check_question(q, question_ids);
    std::set<std::string> card_ids;
    for (const Flashcard& card : lesson_.flashcards) check_flashcard(card, card_ids);
    std::stable_sort(out_.begin(), out_.end(),
                     [](const Problem& a, const Problem& b) { return a.line < b.line; });
    return std::move(out_);
  }

 private:
  void add(int line, std::string message) {
    out_.push_back({lesson_.file, line, std::move(message)});
  }

  void require_text(const std::string& text, int line, const std::string& what) {
    if (is_blank(text)) add(line, what + " is missing or empty");
  }

  void check_id(const std::string& id, int line, const std::string& what,
                std::set<std::string>& seen) {
    if (id.empty()) {
      add(line, what + " needs an id");
    } else if (!is_id(id)) {
      add(line, what + " id '" + id + "' may use only a-z, 0-9 and '-'");
    } else if (!seen.insert(id).second) {
      add(line, what + " id '" + id + "' is used twice in this lesson");
    }
  }

  void check_header() {
    const Lesson& l = lesson_;
    if (l.id.empty()) {
      add(1, "the lesson needs an id ([a-z0-9-]+)");
    } else if (!is_id(l.id)) {
      add(l.line_of("id"), "the lesson id '" + l.id + "' may use only a-z, 0-9 and '-'");
    }
    if (l.number < 0 || l.number > 99) {
      add(l.line_of("number"), "the lesson needs a number from 0 to 99");
    } else if (is_id(l.id)) {
      char expected[16];
      std::snprintf(expected, sizeof expected, "%02d-", static_cast<int>(l.number));
      const std::string stem = std::filesystem::path(l.file).stem().string();
      if (stem != expected + l.id) {
        add(1, "the file of lesson " + std::to_string(l.number) + " '" + l.id + "' must be named " +
                   expected + l.id + ".yaml");
      }
    }
    require_text(l.title, l.line_of("title"), "the lesson's title");
    require_text(l.summary, l.line_of("summary"), "the lesson's summary");
    if (l.objectives.empty()) {
      add(l.line_of("objectives"), "the lesson needs objectives: a list of a, b, c");
    }
    std::set<std::string> seen;
    for (const std::string& o : l.objectives) {
      if (!contains(kObjectives, o)) {
        add(l.line_of("objectives"), "objective '" + o + "' is not one of a, b or c");
      } else if (!seen.insert(o).second) {
        add(l.line_of("objectives"), "objective '" + o + "' is listed twice");
      }
    }
    check_placeholders(l.title, l.line_of("title"), "the title", {});
    check_placeholders(l.summary, l.line_of("summary"), "the summary", {});
    check_placeholders(l.intro, l.line_of("intro"), "the intro", {});
    if (l.steps.empty()) add(l.line_of("steps"), "the lesson needs at least one step");
  }

  void check_placeholders(const std::string& text, int line, const std::string& where,
                          const Allowed& allowed) {
    for (const PlaceholderRef& ref : find_placeholders(text)) {
      const int at = line + ref.line_offset;
      const std::string head = where + ": " + ref.written + " ";
      if (ref.space == "model") {
        if (!is_model_placeholder(ref.name)) {
          std::vector<std::string_view> names;
          for (const PlaceholderSpec& p : model_placeholders()) names.push_back(p.name);
          add(at, head + "is not a model placeholder; use model." + one_of(names));
        }
      } else if (ref.space == "measure") {
        const std::string_view measure = kept_measure(ref.name);
        const std::string kept = ref.name.substr(0, ref.name.size() - measure.size());
        const MeasureSpec* spec = find_measure(measure);
        if (spec == nullptr) {
          add(at, head + "names no measure (see lessons/README.md)");
        } else if (unit_written_after(text, ref, spec->unit)) {
          add(at, head + "is filled with its unit (" + std::string(spec->unit) +
                      "): the word after it repeats it (\"200 steps steps\")");
        } else if (!kept.empty() && allowed.kept.count(kept.substr(0, kept.size() - 1)) == 0) {
          add(at, head + "names a measure the step's run does not keep");
        } else if (!allowed.measure) {
          add(at, head + "can only be filled after a run: use it in a step's explain");
        }
      } else if (ref.space == "param" || ref.space == "calc") {
        const GeneratorSpec* g = allowed.generator;
        if (g == nullptr) {
          add(at, head + "belongs in a generated question");
        } else if (ref.space == "param" && find_param(*g, ref.name) == nullptr) {
          add(at, head + "is not a parameter of " + std::string(g->name));
        } else if (ref.space == "calc" &&
                   std::find(g->values.begin(), g->values.end(), ref.name) == g->values.end()) {
          add(at, head + "is not a value " + std::string(g->name) + " offers; it offers calc." +
                      one_of(std::span<const std::string_view>(g->values)));
        }
      } else if (ref.space == "answer" && ref.name.empty()) {
        if (!allowed.answer) add(at, head + "belongs in a question's working");
      } else {
        add(at, head + "is not a placeholder; use model.*, measure.*, param.*, calc.* or answer");
      }
    }
  }

  void check_step(const Step& s, bool measured, std::set<std::string>& ids) {
    const std::set<std::string> earlier = ids;  // steps.<id>.* may name only these
    check_id(s.id, s.line, "a step", ids);
    const std::string where = "step '" + s.id + "'";
    require_text(s.title, s.line_of("title"), where + ": title");
    require_text(s.text, s.line_of("text"), where + ": text");
    check_placeholders(s.title, s.line_of("title"), where + " title", {});
    check_placeholders(s.text, s.line_of("text"), where + " text", {});
    if (s.predict) check_prediction(*s.predict, where);
    for (const Action& a : s.run) validate_action(a, lesson_.file, out_);
    for (const Observation& o : s.observe) {
      if (find_measure(o.measure) == nullptr) {
        add(o.line, "observe: '" + o.measure + "' is not a measure (see lessons/README.md)");
      }
      require_text(o.label, o.line, "observe " + o.measure + ": label");
    }
    if (!s.observe.empty() && !measured) {
      add(s.line_of("observe"), where + " observes before any step has run something");
    }
    Allowed explain;
    explain.measure = measured;
    explain.kept = kept_names(s);
    check_placeholders(s.explain, s.line_of("explain"), where + " explain", explain);
    check_placeholders(s.explain_if_not, s.line_of("explain_if_not"), where + " explain_if_not",
                       explain);
    check_expectations(s, measured, earlier);
  }

  static std::set<std::string> kept_names(const Step& s) {
    std::set<std::string> names;
    for (const Action& a : s.run) {
      if (a.name == "keep") names.insert(a.value.text);
    }
    return names;
  }

  // The names a step's conditions read exist when they are evaluated: measures of the
  // vocabulary, of this step or of an earlier step of the lesson.
  void check_expectations(const Step& s, bool measured, const std::set<std::string>& earlier) {
    const std::string where = "step '" + s.id + "'";
    if (!s.expect.empty() && !measured) {
      add(s.line_of("expect"), where + " expects before any step has run something");
    }
    if (!s.explain_if_not.empty() && s.expect.empty()) {
      add(s.line_of("explain_if_not"), where + ": explain_if_not needs expect conditions");
    }
    if (s.repeat < 1 || s.repeat > kMaxRepeat) {
      add(s.line_of("repeat"), where + ": repeat " + std::to_string(s.repeat) + " is outside 1.." +
                                   std::to_string(kMaxRepeat));
    } else if (s.repeat > 1 && s.run.empty()) {
      add(s.line_of("repeat"), where + ": repeat needs a run in the same step");
    }
    const std::set<std::string> kept = kept_names(s);
    for (const Action& a : s.run) {
      if (a.name != "keep") continue;
      const std::string& k = a.value.text;
      const bool word = !k.empty() && k != "steps" && std::all_of(k.begin(), k.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || c == '_';
      });
      if (!word) add(a.line, "keep: '" + k + "' must be a name of a-z and '_' (not steps)");
    }
    for (const Expectation& e : s.expect) {
      if (!e.expression) continue;  // the loader reported it
      for (const NameRef& name : names_read(*e.expression)) {
        const std::string head = "expect '" + e.written + "': " + name.written() + " ";
        if (!name.step.empty() && earlier.count(name.step) == 0) {
          add(e.line, head + "names no earlier step of this lesson");
        } else if (!name.kept.empty() && kept.count(name.kept) == 0) {
          add(e.line, head + "needs `keep: " + name.kept + "` in the step's run");
        } else if (find_measure(name.measure) == nullptr) {
          add(e.line, head + "names no measure (see lessons/README.md)");
        }
      }
    }
  }

  void check_prediction(const Prediction& p, const std::string& where) {
    require_text(p.prompt, p.line, where + ": prediction prompt");
    check_placeholders(p.prompt, p.line, where + " prediction", {});
    if (p.kind == PredictionKind::kChoice) {
      if (p.options.size() < 2) add(p.line, where + ": choice prediction needs 2 or more options");
      if (!p.unit.empty()) add(p.line, where + ": choice prediction has options, not a unit");
    } else {
      if (p.unit.empty()) add(p.line, where + ": number prediction needs a unit");
      if (!p.options.empty()) add(p.line, where + ": number prediction has a unit, not options");
    }
    for (const std::string& o : p.options) {
      if (is_blank(o)) add(p.line, where + ": prediction has an empty option");
    }
  }

  // Fields a kind of question does not use, reported where they are written.
  void refuse_fields(const Question& q, std::initializer_list<const char*> fields,
                     const std::string& why) {
    for (const char* f : fields) {
      if (q.field_lines.count(f) != 0) add(q.line_of(f), "'" + std::string(f) + "' " + why);
    }
  }

  void check_question(const Question& q, std::set<std::string>& ids) {
    check_id(q.id, q.line, "a question", ids);
    const std::string where = "question '" + q.id + "'";
    if (q.field_lines.count("kind") == 0)
      add(q.line, where + " needs a kind: choice, number or explain");
    require_text(q.prompt, q.line_of("prompt"), where + ": prompt");
    require_text(q.working, q.line_of("working"),
                 where + ": working (the full solution shown after answering)");
    Allowed allowed;
    allowed.measure = true;
    bool computable = false;
    switch (q.kind) {
      case QuestionKind::kChoice:
        check_choice(q, where);
        break;
      case QuestionKind::kNumber:
        computable = check_number(q, where);
        if (q.generated()) allowed.generator = find_generator(q.generator);
        break;
      case QuestionKind::kExplain:
        require_text(q.model_answer, q.line_of("model_answer"), where + ": model_answer");
        if (q.self_check.empty()) {
          add(q.line_of("self_check"), where + " needs a self_check list (at least one item)");
        }
        refuse_fields(q, {"options", "generator", "params", "unit", "tolerance", "confirm"},
                      "is not used by an explain question");
        break;
    }
    check_placeholders(q.prompt, q.line_of("prompt"), where + " prompt", allowed);
    for (const std::string& option : q.options) {
      check_placeholders(option, q.line_of("options"), where + " options", allowed);
    }
    check_placeholders(q.model_answer, q.line_of("model_answer"), where + " model_answer", allowed);
    allowed.answer = true;
    check_placeholders(q.working, q.line_of("working"), where + " working", allowed);
    if (model_ != nullptr && computable) {
      check_on_model(q, where);
    }
  }

  void check_choice(const Question& q, const std::string& where) {
    if (q.options.size() < 2) add(q.line_of("options"), where + " needs 2 or more options");
    for (const std::string& o : q.options) {
      if (is_blank(o)) add(q.line_of("options"), where + " has an empty option");
    }
    if (!q.choice_answer) {
      if (q.field_lines.count("answer") == 0) {
        add(q.line, where + " needs an answer: the index of the right option, from 0");
      }
    } else if (*q.choice_answer < 0 || *q.choice_answer >= static_cast<int64_t>(q.options.size())) {
      add(q.line_of("answer"), where + ": answer " + std::to_string(*q.choice_answer) +
                                   " is not an option's index (0 to " +
                                   std::to_string(static_cast<int64_t>(q.options.size()) - 1) +
                                   ")");
    }
    refuse_fields(
        q, {"generator", "params", "unit", "tolerance", "confirm", "model_answer", "self_check"},
        "is not used by a choice question");
  }

  // Returns whether a generated question's generator and parameters are valid.
  bool check_number(const Question& q, const std::string& where) {
    refuse_fields(q, {"options", "model_answer", "self_check"}, "is not used by a number question");
    if (is_blank(q.unit)) add(q.line_of("unit"), where + " needs a unit (bytes, ms, x, ...)");
    if (!q.tolerance) {
      if (q.field_lines.count("tolerance") == 0) {
        add(q.line, where + " needs a tolerance (relative, e.g. 0.02)");
      }
    } else if (!(*q.tolerance > 0 && *q.tolerance <= kMaxTolerance)) {
      add(q.line_of("tolerance"),
          where + ": tolerance must be above 0 and at most 0.5 (relative), got " +
              format_plain(*q.tolerance));
    }
    if (!q.generated()) {
      if (!q.number_answer && q.field_lines.count("answer") == 0) {
        add(q.line, where + " needs an answer, or a generator to compute it");
      }
      refuse_fields(q, {"params", "confirm"}, "needs a generator");
      return false;
    }
    if (q.field_lines.count("answer") != 0) {
      add(q.line_of("answer"), where + " is generated: its answer is computed, remove answer");
    }
    const GeneratorSpec* g = find_generator(q.generator);
    const int at = q.line_of("generator");
    bool params_ok = true;
    try {
      check_generator_params(q.generator, q.params);
    } catch (const InputError& error) {
      add(g == nullptr ? at : (q.params_line > 0 ? q.params_line : at),
          where + ": " + error.what());
      params_ok = false;
    }
    if (g == nullptr) return false;
    if (!is_blank(q.unit) && q.unit != g->unit) {
      add(q.line_of("unit"), where + ": unit must be " + std::string(g->unit) + ", the unit of " +
                                 std::string(g->name));
    }
    if (q.confirm) check_confirm(*q.confirm, *g, where);
    return params_ok;
  }

  void check_confirm(const Confirmation& c, const GeneratorSpec& g, const std::string& where) {
    if (c.run.empty()) add(c.line, where + ": confirm needs a run list");
    for (const Action& a : c.run) validate_action(a, lesson_.file, out_);
    const MeasureSpec* m = find_measure(c.measure);
    if (m == nullptr) {
      add(c.line, where + ": confirm measure '" + c.measure + "' is not a measure");
    } else if (m->unit != g.unit) {
      add(c.line, where + ": confirm measure " + c.measure + " is in " + std::string(m->unit) +
                      ", the answer in " + std::string(g.unit));
    }
  }

  // Computes the answer on the model and fills the texts: what the learner will see.
  void check_on_model(const Question& q, const std::string& where) {
    for (const auto& [name, value] : q.params) {
      if (value == "measured") return;  // needs a measurement; checked by parameters only
    }
    try {
      const GeneratedAnswer answer = generate_answer(q, *model_);
      FillContext context;
      context.model = model_;
      context.generated = &answer;
      context.answer = answer_text(q, &answer);
      Measurements any;  // measures are the window's; here only their names matter
      for (const MeasureSpec& m : measure_specs()) any[std::string(m.name)] = 1;
      context.measured = &any;
      for (const std::string* text : {&q.prompt, &q.working}) {
        for (const std::string& missing : fill_placeholders(*text, context).missing) {
          add(q.line_of(text == &q.prompt ? "prompt" : "working"),
              where + ": " + missing + " cannot be filled on " + model_->name);
        }
      }
    } catch (const Error& error) {
      add(q.params_line > 0 ? q.params_line : q.line_of("generator"),
          where + " on " + model_->name + ": " + error.what());
    }
  }

  void check_flashcard(const Flashcard& card, std::set<std::string>& ids) {
    check_id(card.id, card.line, "a flashcard", ids);
    require_text(card.front, card.line, "flashcard '" + card.id + "': front");
    require_text(card.back, card.line, "flashcard '" + card.id + "': back");
  }

  const Lesson& lesson_;
  const ModelFacts* model_;
  std::vector<Problem> out_;
};

// `what` names the argument in messages: "set_kv_type", "generate's max_tokens".
void check_argument(const std::string& what, const Action& action, const FieldSpec& field,
                    const ArgValue& value, const std::string& file, std::vector<Problem>& out) {
  switch (field.kind) {
    case ArgKind::kChoice:
      if (!contains(field.allowed, value.text)) {
        out.push_back({file, action.line,
                       what + " '" + value.text + "' is not one of " + one_of(field.allowed)});
      }
      break;
    case ArgKind::kInteger:
      if (value.integer < field.min || value.integer > field.max) {
        out.push_back({file, action.line,
                       what + " " + std::to_string(value.integer) + " is outside " +
                           std::to_string(field.min) + ".." + std::to_string(field.max)});
      }
      break;
    case ArgKind::kChoiceList:
      if (value.items.empty())
        out.push_back({file, action.line, what + " needs at least one item"});
      for (const std::string& item : value.items) {
        if (!contains(field.allowed, item)) {
          out.push_back({file, action.line,
                         what + ": '" + item + "' is not one of " + one_of(field.allowed)});
        }
      }
      break;
    case ArgKind::kText:
      if (is_blank(value.text)) out.push_back({file, action.line, what + " is empty"});
      break;
    case ArgKind::kBool:
    case ArgKind::kFields:
      break;
  }
}

}  // namespace

void validate_action(const Action& action, const std::string& file, std::vector<Problem>& out) {
  const ActionSpec* spec = find_action(action.name);
  if (spec == nullptr) {
    out.push_back({file, action.line, "unknown action '" + action.name + "'"});
    return;
  }
  if (spec->kind != ArgKind::kFields) {
    const FieldSpec as_field{spec->name, spec->kind, spec->allowed, spec->min, spec->max, true, {}};
    check_argument(action.name, action, as_field, action.value, file, out);
    return;
  }
  for (const FieldSpec& field : spec->fields) {
    const auto it = action.fields.find(std::string(field.name));
    if (it == action.fields.end()) {
      if (field.required) {
        out.push_back({file, action.line,
                       action.name + " needs " + std::string(field.name) + " (e.g. `" +
                           std::string(spec->example) + "`)"});
      }
      continue;
    }
    check_argument(action.name + "'s " + std::string(field.name), action, field, it->second, file,
                   out);
  }
  if (action.name == "highlight" && action.fields.count("panel") &&
      action.fields.count("element")) {
    const std::string panel = action.field_text("panel");
    const std::string element = action.field_text("element");
    const auto elements = highlight_elements(panel);
    if (!elements.empty() &&
        std::find(elements.begin(), elements.end(), element) == elements.end()) {
      out.push_back({file, action.line,
                     "highlight: the " + panel + " panel has no element '" + element +
                         "'; it has " + one_of(elements)});
    }
  }
}

std::vector<Problem> validate_lesson(const Lesson& lesson, const ModelFacts* model) {
  return Checker(lesson, model).run();
}

std::vector<Problem> validate_collection(const std::vector<Lesson>& lessons) {
  std::vector<Problem> out;
  std::map<std::string, const Lesson*> ids;
  std::map<int64_t, const Lesson*> numbers;
  std::map<std::string, const Lesson*> cards;
  for (const Lesson& l : lessons) {
    if (!l.id.empty() && !ids.emplace(l.id, &l).second) {
      out.push_back(
          {l.file, l.line_of("id"), "lesson id '" + l.id + "' is also used by " + ids[l.id]->file});
    }
    if (l.number >= 0 && !numbers.emplace(l.number, &l).second) {
      out.push_back({l.file, l.line_of("number"),
                     "lesson number " + std::to_string(l.number) + " is also used by " +
                         numbers[l.number]->file});
    }
    for (const Flashcard& card : l.flashcards) {
      const auto [it, added] = cards.emplace(card.id, &l);
      if (!card.id.empty() && !added && it->second != &l) {
        out.push_back({l.file, card.line,
                       "flashcard id '" + card.id + "' is also used by " + it->second->file +
                           " (progress is kept per card: ids must be unique across lessons)"});
      }
    }
  }
  return out;
}

}  // namespace servescope::lessons
