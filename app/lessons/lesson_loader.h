// Reads a lesson file (YAML, lessons/README.md) into a Lesson. Structure is checked here: YAML
// syntax, the type of every value, unknown or repeated keys, action names and the types of
// their arguments. Each problem names the file and line (yaml-cpp's marks). What the values
// mean (required fields, allowed values, ids, placeholders) is the validator's job.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "app/lessons/lesson.h"

namespace servescope::lessons {

struct LoadResult {
  std::optional<Lesson> lesson;  // absent when the file could not be read or parsed at all
  std::vector<Problem> problems;
};

// `file` names the source in problems (usually the path as given).
LoadResult load_lesson_text(const std::string& text, const std::string& file);
LoadResult load_lesson_file(const std::filesystem::path& path);

// Lesson files in `dir`: *.yaml and *.yml, sorted by name. Empty when there are none;
// InputError (engine/core/error.h) when `dir` is not a readable folder.
std::vector<std::filesystem::path> lesson_files(const std::filesystem::path& dir);

}  // namespace servescope::lessons
