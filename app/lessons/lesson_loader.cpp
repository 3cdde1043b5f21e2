#include "app/lessons/lesson_loader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <optional>
#include <set>
#include <string_view>

#include "app/lessons/vocabulary.h"
#include "engine/core/error.h"
#include "engine/core/regular_file.h"
#include "engine/tokenizer/utf8.h"

namespace servescope::lessons {
namespace {

using Keys = std::vector<std::string_view>;

const Keys kLessonKeys = {"id",    "number", "title",     "objectives", "summary",
                          "intro", "steps",  "questions", "flashcards"};
const Keys kStepKeys = {"id",      "title",   "text",   "predict",        "run",
                         "observe", "explain", "expect", "explain_if_not", "repeat"};
const Keys kPredictKeys = {"kind", "prompt", "options", "unit"};
const Keys kObserveKeys = {"measure", "label"};
const Keys kQuestionKeys = {"id",        "kind",         "prompt",    "options",   "answer",
                            "generator", "params",       "unit",      "tolerance", "working",
                            "confirm",   "model_answer", "self_check"};
const Keys kConfirmKeys = {"run", "measure"};
const Keys kFlashcardKeys = {"id", "front", "back"};

std::string join(const Keys& keys) { return one_of(std::span<const std::string_view>(keys)); }

// Parses YAML nodes into lesson types, collecting problems instead of stopping at the first.
class Reader {
 public:
  Reader(std::string file, const std::string& source, std::vector<Problem>& problems)
      : file_(std::move(file)), source_(source), problems_(problems) {}

  static int line(const YAML::Node& node) {
    const YAML::Mark mark = node.Mark();
    return mark.line < 0 ? 0 : mark.line + 1;
  }

  // The line a text value starts on: a block scalar (`|` or `>`) starts on the next line, so
  // a placeholder's line is this plus the newlines before it.
  int content_line(const YAML::Node& value, int key_line) const {
    const YAML::Mark mark = value.Mark();
    if (!value.IsScalar() || mark.pos < 0) return key_line;
    const auto pos = static_cast<size_t>(mark.pos);
    const bool block = pos < source_.size() && (source_[pos] == '|' || source_[pos] == '>');
    return line(value) + (block ? 1 : 0);
  }

  void problem(int at, std::string message) {
    problems_.push_back({file_, at, std::move(message)});
  }

  // Calls on_key(key, value, line) for each entry of a mapping; reports a value that is not a
  // mapping, unknown keys (with the known ones) and repeated keys.
  bool for_each_key(const YAML::Node& node, std::string_view what, const Keys& known,
                    const std::function<void(const std::string&, const YAML::Node&, int)>& on_key) {
    if (!node.IsMap()) {
      problem(line(node), std::string(what) + " must be a mapping of keys (" + join(known) + ")");
      return false;
    }
    std::set<std::string> seen;
    for (const auto& entry : node) {
      const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : std::string();
      const int at = line(entry.first);
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        problem(at, "unknown key '" + key + "' in " + std::string(what) +
                        "; known keys: " + join(known));
        continue;
      }
      if (!seen.insert(key).second) {
        problem(at, "key '" + key + "' appears twice in " + std::string(what));
        continue;
      }
      on_key(key, entry.second, at);
    }
    return true;
  }

  std::string text(const YAML::Node& node, std::string_view what) {
    if (node.IsNull()) return {};
    if (!node.IsScalar()) {
      problem(line(node), std::string(what) + " must be text");
      return {};
    }
    return node.Scalar();
  }

  std::optional<int64_t> integer(const YAML::Node& node, std::string_view what) {
    const std::string s = node.IsScalar() ? node.Scalar() : std::string();
    int64_t value = 0;
    const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (s.empty() || error != std::errc() || end != s.data() + s.size()) {
      problem(line(node), std::string(what) + " must be a whole number, got '" + s + "'");
      return std::nullopt;
    }
    return value;
  }

  std::optional<double> number(const YAML::Node& node, std::string_view what) {
    const std::string s = node.IsScalar() ? node.Scalar() : std::string();
    double value = 0;
    const char* first = s.data() + (s.starts_with('+') ? 1 : 0);
    const auto [end, error] = std::from_chars(first, s.data() + s.size(), value);
    if (s.empty() || error != std::errc() || end != s.data() + s.size()) {
      problem(line(node), std::string(what) + " must be a number, got '" + s + "'");
      return std::nullopt;
    }
    return value;
  }

  std::optional<bool> flag(const YAML::Node& node, std::string_view what) {
    const std::string s = node.IsScalar() ? node.Scalar() : std::string();
    if (s == "true") return true;
    if (s == "false") return false;
    problem(line(node), std::string(what) + " must be true or false, got '" + s + "'");
    return std::nullopt;
  }

  std::vector<std::string> text_list(const YAML::Node& node, std::string_view what) {
    std::vector<std::string> items;
    if (!node.IsSequence()) {
      problem(line(node), std::string(what) + " must be a list, e.g. [a, b]");
      return items;
    }
    for (const YAML::Node& item : node) {
      if (!item.IsScalar()) {
        problem(line(item), "each item of " + std::string(what) + " must be text");
        continue;
      }
      items.push_back(item.Scalar());
    }
    return items;
  }

  // Calls on_item for each entry of a list.
  void for_each_item(const YAML::Node& node, std::string_view what,
                     const std::function<void(const YAML::Node&)>& on_item) {
    if (!node.IsSequence()) {
      problem(line(node), std::string(what) + " must be a list (entries starting with '- ')");
      return;
    }
    for (const YAML::Node& item : node) on_item(item);
  }

  std::optional<ArgValue> argument(const YAML::Node& node, ArgKind kind, std::string_view what) {
    ArgValue value;
    switch (kind) {
      case ArgKind::kChoice:
      case ArgKind::kText:
        if (!node.IsScalar()) break;
        value.text = node.Scalar();
        return value;
      case ArgKind::kInteger:
        if (const auto n = integer(node, what)) {
          value.integer = *n;
          value.text = node.Scalar();
          return value;
        }
        return std::nullopt;
      case ArgKind::kBool:
        if (const auto b = flag(node, what)) {
          value.flag = *b;
          value.text = node.Scalar();
          return value;
        }
        return std::nullopt;
      case ArgKind::kChoiceList:
        if (!node.IsSequence()) break;
        value.items = text_list(node, what);
        return value;
      case ArgKind::kFields:
        return std::nullopt;  // read by action()
    }
    problem(line(node), std::string(what) + " has the wrong form");
    return std::nullopt;
  }

  // `- name: argument`, the argument typed by the action vocabulary.
  std::optional<Action> action(const YAML::Node& node) {
    const int at = line(node);
    if (!node.IsMap() || node.size() != 1) {
      problem(at, "each action must be one `name: argument` pair, e.g. `- set_kv_type: q8_0`");
      return std::nullopt;
    }
    const auto entry = *node.begin();
    Action result;
    result.name = entry.first.IsScalar() ? entry.first.Scalar() : std::string();
    result.line = at;
    const ActionSpec* spec = find_action(result.name);
    if (spec == nullptr) {
      std::vector<std::string> names;
      for (const ActionSpec& a : action_specs()) names.emplace_back(a.name);
      problem(at, "unknown action '" + result.name + "'; actions: " + one_of(names));
      return std::nullopt;
    }
    const std::string what =
        "the argument of " + result.name + " (e.g. `" + std::string(spec->example) + "`)";
    if (spec->kind != ArgKind::kFields) {
      const auto value = argument(entry.second, spec->kind, what);
      if (!value) return std::nullopt;
      result.value = *value;
      return result;
    }
    if (entry.second.IsNull()) return result;  // `batch_sweep:` with nothing after it
    Keys known;
    for (const FieldSpec& f : spec->fields) known.push_back(f.name);
    bool ok = true;
    const bool is_map = for_each_key(
        entry.second, what, known, [&](const std::string& key, const YAML::Node& v, int) {
          const FieldSpec& field = *find_field(*spec, key);
          const auto value = argument(v, field.kind, result.name + "'s " + key);
          if (value) {
            result.fields[key] = *value;
          } else {
            ok = false;
          }
        });
    if (!is_map || !ok) return std::nullopt;
    return result;
  }

  std::vector<Action> actions(const YAML::Node& node, std::string_view what) {
    std::vector<Action> list;
    for_each_item(node, what, [&](const YAML::Node& item) {
      if (auto a = action(item)) list.push_back(std::move(*a));
    });
    return list;
  }

  Prediction prediction(const YAML::Node& node) {
    Prediction p;
    p.line = line(node);
    for_each_key(
        node, "predict", kPredictKeys, [&](const std::string& key, const YAML::Node& v, int) {
          if (key == "kind") {
            const std::string kind = text(v, "predict's kind");
            if (kind == "choice") {
              p.kind = PredictionKind::kChoice;
            } else if (kind == "number") {
              p.kind = PredictionKind::kNumber;
            } else {
              problem(line(v), "predict's kind must be choice or number, got '" + kind + "'");
            }
          } else if (key == "prompt") {
            p.prompt = text(v, "predict's prompt");
          } else if (key == "options") {
            p.options = text_list(v, "predict's options");
          } else if (key == "unit") {
            p.unit = text(v, "predict's unit");
          }
        });
    return p;
  }

  Observation observation(const YAML::Node& node) {
    Observation o;
    o.line = line(node);
    for_each_key(node, "an observe entry", kObserveKeys,
                 [&](const std::string& key, const YAML::Node& v, int) {
                   if (key == "measure") o.measure = text(v, "measure");
                   if (key == "label") o.label = text(v, "label");
                 });
    return o;
  }

  Step step(const YAML::Node& node) {
    Step s;
    s.line = line(node);
    for_each_key(
        node, "a step", kStepKeys, [&](const std::string& key, const YAML::Node& v, int at) {
          s.field_lines[key] = content_line(v, at);
          if (key == "id") s.id = text(v, "a step's id");
          if (key == "title") s.title = text(v, "a step's title");
          if (key == "text") s.text = text(v, "a step's text");
          if (key == "explain") s.explain = text(v, "a step's explain");
          if (key == "predict") s.predict = prediction(v);
          if (key == "run") s.run = actions(v, "run");
          if (key == "observe") {
            for_each_item(v, "observe",
                          [&](const YAML::Node& o) { s.observe.push_back(observation(o)); });
          }
          if (key == "expect") {
            for_each_item(v, "expect", [&](const YAML::Node& e) { s.expect.push_back(expectation(e)); });
          }
          if (key == "explain_if_not") s.explain_if_not = text(v, "a step's explain_if_not");
          if (key == "repeat") {
            if (const auto n = integer(v, "a step's repeat")) s.repeat = *n;
          }
        });
    return s;
  }

  // One condition, parsed now so that a typo is a problem at its line.
  Expectation expectation(const YAML::Node& node) {
    Expectation e;
    e.line = line(node);
    e.written = text(node, "an expect condition");
    if (e.written.empty()) return e;
    ParsedExpression parsed = parse_expression(e.written);
    if (!parsed.expression) problem(e.line, "expect '" + e.written + "': " + parsed.error);
    e.expression = std::move(parsed.expression);
    return e;
  }

  Confirmation confirmation(const YAML::Node& node) {
    Confirmation c;
    c.line = line(node);
    for_each_key(node, "confirm", kConfirmKeys,
                 [&](const std::string& key, const YAML::Node& v, int) {
                   if (key == "run") c.run = actions(v, "confirm's run");
                   if (key == "measure") c.measure = text(v, "confirm's measure");
                 });
    return c;
  }

  Question question(const YAML::Node& node) {
    Question q;
    q.line = line(node);
    std::optional<YAML::Node> answer;  // read once the kind is known
    for_each_key(node, "a question", kQuestionKeys,
                 [&](const std::string& key, const YAML::Node& v, int at) {
                   q.field_lines[key] = content_line(v, at);
                   if (key == "id") q.id = text(v, "a question's id");
                   if (key == "kind") {
                     const std::string kind = text(v, "a question's kind");
                     if (kind == "choice") {
                       q.kind = QuestionKind::kChoice;
                     } else if (kind == "number") {
                       q.kind = QuestionKind::kNumber;
                     } else if (kind == "explain") {
                       q.kind = QuestionKind::kExplain;
                     } else {
                       problem(line(v),
                               "a question's kind must be choice, number or explain, "
                               "got '" +
                                   kind + "'");
                     }
                   }
                   if (key == "prompt") q.prompt = text(v, "a question's prompt");
                   if (key == "options") q.options = text_list(v, "a question's options");
                   if (key == "answer") answer = v;
                   if (key == "generator") q.generator = text(v, "a question's generator");
                   if (key == "params") {
                     q.params_line = line(v);
                     read_params(v, q.params);
                   }
                   if (key == "unit") q.unit = text(v, "a question's unit");
                   if (key == "tolerance") q.tolerance = number(v, "tolerance");
                   if (key == "working") q.working = text(v, "a question's working");
                   if (key == "confirm") q.confirm = confirmation(v);
                   if (key == "model_answer") q.model_answer = text(v, "model_answer");
                   if (key == "self_check") q.self_check = text_list(v, "self_check");
                 });
    if (answer) {
      if (q.kind == QuestionKind::kChoice) {
        q.choice_answer = integer(*answer, "a choice question's answer (an index from 0)");
      } else if (q.kind == QuestionKind::kNumber) {
        q.number_answer = number(*answer, "a number question's answer");
      } else {
        problem(line(*answer), "an explain question has model_answer and self_check, not answer");
      }
    }
    return q;
  }

  // Parameters are checked against the generator by the validator; any key is read here.
  void read_params(const YAML::Node& node, std::map<std::string, std::string>& params) {
    if (!node.IsMap()) {
      problem(line(node), "params must be a mapping, e.g. {tokens: 200, kv_type: q8_0}");
      return;
    }
    for (const auto& entry : node) {
      const std::string key = entry.first.Scalar();
      if (params.count(key) != 0)
        problem(line(entry.first), "parameter '" + key + "' appears twice");
      params[key] = text(entry.second, "the parameter " + key);
    }
  }

  Flashcard flashcard(const YAML::Node& node) {
    Flashcard f;
    f.line = line(node);
    for_each_key(node, "a flashcard", kFlashcardKeys,
                 [&](const std::string& key, const YAML::Node& v, int) {
                   if (key == "id") f.id = text(v, "a flashcard's id");
                   if (key == "front") f.front = text(v, "a flashcard's front");
                   if (key == "back") f.back = text(v, "a flashcard's back");
                 });
    return f;
  }

  Lesson lesson(const YAML::Node& root) {
    Lesson l;
    l.file = file_;
    l.line = 1;
    for_each_key(
        root, "a lesson file", kLessonKeys,
        [&](const std::string& key, const YAML::Node& v, int at) {
          l.field_lines[key] = content_line(v, at);
          if (key == "id") l.id = text(v, "the lesson's id");
          if (key == "number") {
            if (const auto n = integer(v, "the lesson's number")) l.number = *n;
          }
          if (key == "title") l.title = text(v, "the lesson's title");
          if (key == "objectives") l.objectives = text_list(v, "objectives");
          if (key == "summary") l.summary = text(v, "the lesson's summary");
          if (key == "intro") l.intro = text(v, "the lesson's intro");
          if (key == "steps") {
            for_each_item(v, "steps", [&](const YAML::Node& s) { l.steps.push_back(step(s)); });
          }
          if (key == "questions") {
            for_each_item(v, "questions",
                          [&](const YAML::Node& q) { l.questions.push_back(question(q)); });
          }
          if (key == "flashcards") {
            for_each_item(v, "flashcards",
                          [&](const YAML::Node& f) { l.flashcards.push_back(flashcard(f)); });
          }
        });
    return l;
  }

 private:
  std::string file_;
  const std::string& source_;
  std::vector<Problem>& problems_;
};

// The first ill-formed UTF-8 byte as a problem at its line: YAML is UTF-8, and a stray byte
// would otherwise reach the JSON report (which refuses it) through a quoted value.
std::optional<Problem> invalid_utf8(const std::string& text, const std::string& file) {
  for (size_t pos = 0; pos < text.size();) {
    const utf8::Step step = utf8::next(text, pos);
    if (step.kind == utf8::Step::Kind::kCharacter) {
      pos += step.length;
      continue;
    }
    const auto line =
        1 + std::count(text.begin(), text.begin() + static_cast<ptrdiff_t>(pos), '\n');
    return Problem{file, static_cast<int>(line),
                   "not valid UTF-8 (byte offset " + std::to_string(pos) + ")"};
  }
  return std::nullopt;
}

}  // namespace

LoadResult load_lesson_text(const std::string& text, const std::string& file) {
  LoadResult result;
  if (std::optional<Problem> problem = invalid_utf8(text, file)) {
    result.problems.push_back(std::move(*problem));
    return result;
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& error) {
    const int line = error.mark.line < 0 ? 0 : error.mark.line + 1;
    result.problems.push_back({file, line, "not valid YAML: " + error.msg});
    return result;
  }
  Reader reader(file, text, result.problems);
  if (!root.IsMap()) {
    reader.problem(1, "a lesson file must be a mapping starting with `id:`, `number:`, `title:`");
    return result;
  }
  result.lesson = reader.lesson(root);
  return result;
}

LoadResult load_lesson_file(const std::filesystem::path& path) {
  std::string text;
  try {
    text = read_regular_file(path);
  } catch (const FileError& error) {
    LoadResult result;
    result.problems.push_back({path.string(), 0, std::string("cannot be read: ") + error.what()});
    return result;
  }
  return load_lesson_text(text, path.string());
}

std::vector<std::filesystem::path> lesson_files(const std::filesystem::path& dir) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    throw InputError(dir.string() + " is not a folder of lesson files");
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".yaml" || ext == ".yml")) files.push_back(entry.path());
  }
  if (error)
    throw InputError("cannot list the lesson folder " + dir.string() + ": " + error.message());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace servescope::lessons
