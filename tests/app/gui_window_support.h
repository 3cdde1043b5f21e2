// Shared by the GUI tests that open a window: the options every test window uses, and the
// shipped lessons by id.
#pragma once

#include <gtest/gtest.h>

#include <QString>
#include <filesystem>
#include <string>

#include "app/gui/window/main_window.h"
#include "app/lessons/lesson_loader.h"

namespace servescope::gui::testing {

// A window on the CPU backend that neither reads nor writes the user's settings, with its
// timing models written to `cache_folder`.
inline WindowOptions test_window_options(const QString& cache_folder) {
  WindowOptions options;
  options.remember_settings = false;
  options.backend = BackendChoice(compute::BackendKind::kCpu);
  options.cache_folder = cache_folder;
  return options;
}

// The same with the shipped lessons, the learner's progress kept in `progress_folder`.
inline WindowOptions lesson_window_options(const QString& cache_folder,
                                           const QString& progress_folder) {
  WindowOptions options = test_window_options(cache_folder);
  options.lessons_folder = QString(SERVESCOPE_LESSONS_DIR);
  options.progress_folder = progress_folder;
  return options;
}

// The shipped lesson with this id (a test failure and an empty lesson when there is none).
inline lessons::Lesson shipped_lesson(const std::string& id) {
  const std::filesystem::path dir = SERVESCOPE_LESSONS_DIR;
  for (const std::filesystem::path& file : lessons::lesson_files(dir)) {
    lessons::LoadResult result = lessons::load_lesson_file(file);
    if (result.lesson && result.lesson->id == id) return *result.lesson;
  }
  ADD_FAILURE() << "no lesson " << id << " in " << dir;
  return {};
}

}  // namespace servescope::gui::testing
