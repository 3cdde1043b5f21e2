// Where the application finds the files it ships: the bundled model, the evaluation text and
// the lessons.
//
// They live in <prefix>/share/servescope/ beside <prefix>/bin/ of the running executable. An
// installed tree has that shape (cmake --install, the .deb), and so does the build tree:
// configuring links build/<preset>/share/servescope to the source tree's assets. Nothing is
// compiled in, so an installed copy runs with the source tree gone.
//
// Overrides, for a relocated data folder or a different default model:
//   SERVESCOPE_DATA_DIR  the folder holding models/, eval/ and lessons/
//   SERVESCOPE_MODEL     the default model file itself
#pragma once

#include <filesystem>
#include <string>

namespace servescope::app {

// SERVESCOPE_DATA_DIR when set, else <directory of the executable>/../share/servescope.
std::filesystem::path data_directory();

// SERVESCOPE_MODEL when set, else data_directory()/models/servescope-stories.gguf.
std::filesystem::path bundled_model_path();

// data_directory()/eval/stories.txt: the text perplexity and the load generator use.
std::filesystem::path bundled_eval_text_path();

// data_directory()/lessons: the lesson files (lessons/README.md in the source tree).
std::filesystem::path bundled_lessons_path();

// A one-line message for a bundled file that is not where it should be, naming where it was
// looked for and how to point at it, e.g. for `what` = "the bundled model".
std::string missing_data_file_message(const std::string& what, const std::filesystem::path& path);

}  // namespace servescope::app
