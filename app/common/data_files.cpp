#include "app/common/data_files.h"

#include <cstdlib>
#include <system_error>

namespace servescope::app {
namespace {

std::filesystem::path executable_directory() {
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return std::filesystem::current_path(error);  // no /proc: best effort
  return exe.parent_path();
}

const char* non_empty_env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

}  // namespace

std::filesystem::path data_directory() {
  if (const char* dir = non_empty_env("SERVESCOPE_DATA_DIR")) return dir;
  return (executable_directory() / ".." / "share" / "servescope").lexically_normal();
}

std::filesystem::path bundled_model_path() {
  if (const char* model = non_empty_env("SERVESCOPE_MODEL")) return model;
  return data_directory() / "models" / "servescope-stories.gguf";
}

std::filesystem::path bundled_eval_text_path() { return data_directory() / "eval" / "stories.txt"; }

std::filesystem::path bundled_lessons_path() { return data_directory() / "lessons"; }

std::string missing_data_file_message(const std::string& what, const std::filesystem::path& path) {
  const std::string where = non_empty_env("SERVESCOPE_DATA_DIR") != nullptr
                                ? "SERVESCOPE_DATA_DIR points there"
                                : "looked beside the executable, in ../share/servescope/";
  return what + " is not at " + path.string() + " (" + where +
         "); reinstall ServeScope, set SERVESCOPE_DATA_DIR to the folder holding models/ and "
         "eval/, or pass the file explicitly";
}

}  // namespace servescope::app
