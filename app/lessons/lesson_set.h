// All lessons of a folder, loaded and validated together, and the one-line JSON summary
// `servescope --check-lessons` prints.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "app/lessons/lesson.h"
#include "app/lessons/model_facts.h"

namespace servescope::lessons {

struct LessonSet {
  std::vector<Lesson> lessons;    // every file that parsed, in file-name order
  std::vector<Problem> problems;  // loader, validator and between-lesson problems

  // The lessons whose files have no problem: the ones the window offers.
  std::vector<const Lesson*> usable() const;
};

// Loads and validates every lesson file in `dir` (lesson_files). `model`, when given, is the
// model generated questions are computed on. A folder that cannot be listed is one problem.
LessonSet load_lesson_set(const std::filesystem::path& dir, const ModelFacts* model = nullptr);

// {"lessons":N,"experiments":N,"questions":N,"generated_questions":N,"flashcards":N,
//  "errors":["FILE:LINE: ...", ...]}
std::string lesson_set_json(const LessonSet& set);

// The whole of `--check-lessons`: the JSON line on `out`, one `FILE:LINE: problem` line per
// problem on `err`; returns the exit status (0: no problems, 1: problems).
int check_lessons(const std::filesystem::path& dir, const ModelFacts* model, std::ostream& out,
                  std::ostream& err);

}  // namespace servescope::lessons
