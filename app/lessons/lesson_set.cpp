#include "app/lessons/lesson_set.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>

#include "app/lessons/lesson_loader.h"
#include "app/lessons/lesson_validator.h"
#include "engine/core/error.h"

namespace servescope::lessons {

std::vector<const Lesson*> LessonSet::usable() const {
  std::set<std::string> broken;
  for (const Problem& p : problems) broken.insert(p.file);
  std::vector<const Lesson*> out;
  for (const Lesson& l : lessons) {
    if (broken.count(l.file) == 0) out.push_back(&l);
  }
  return out;
}

LessonSet load_lesson_set(const std::filesystem::path& dir, const ModelFacts* model) {
  LessonSet set;
  std::vector<std::filesystem::path> files;
  try {
    files = lesson_files(dir);
  } catch (const InputError& error) {
    set.problems.push_back({dir.string(), 0, error.what()});
    return set;
  }
  for (const std::filesystem::path& file : files) {
    LoadResult loaded = load_lesson_file(file);
    set.problems.insert(set.problems.end(), loaded.problems.begin(), loaded.problems.end());
    if (!loaded.lesson) continue;
    const std::vector<Problem> found = validate_lesson(*loaded.lesson, model);
    set.problems.insert(set.problems.end(), found.begin(), found.end());
    set.lessons.push_back(std::move(*loaded.lesson));
  }
  const std::vector<Problem> between = validate_collection(set.lessons);
  set.problems.insert(set.problems.end(), between.begin(), between.end());
  std::stable_sort(set.problems.begin(), set.problems.end(),
                   [](const Problem& a, const Problem& b) {
                     return a.file != b.file ? a.file < b.file : a.line < b.line;
                   });
  return set;
}

std::string lesson_set_json(const LessonSet& set) {
  int64_t experiments = 0;
  int64_t questions = 0;
  int64_t generated = 0;
  int64_t flashcards = 0;
  for (const Lesson& l : set.lessons) {
    experiments += l.experiment_count();
    questions += static_cast<int64_t>(l.questions.size());
    generated += l.generated_question_count();
    flashcards += static_cast<int64_t>(l.flashcards.size());
  }
  nlohmann::ordered_json json;
  json["lessons"] = set.lessons.size();
  json["experiments"] = experiments;
  json["questions"] = questions;
  json["generated_questions"] = generated;
  json["flashcards"] = flashcards;
  json["errors"] = nlohmann::json::array();
  for (const Problem& p : set.problems) json["errors"].push_back(p.to_string());
  // A file name need not be UTF-8: its bad bytes print as U+FFFD rather than abort the dump.
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int check_lessons(const std::filesystem::path& dir, const ModelFacts* model, std::ostream& out,
                  std::ostream& err) {
  const LessonSet set = load_lesson_set(dir, model);
  out << lesson_set_json(set) << '\n';
  for (const Problem& p : set.problems) err << p.to_string() << '\n';
  return set.problems.empty() ? 0 : 1;
}

}  // namespace servescope::lessons
