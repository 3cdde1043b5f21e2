#include "app/common/limits.h"
#include "app/gui/window/gui_options.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <sstream>

#include "app/gui/panels/quant_block.h"
#include "app/gui/engine_bridge/quant_lab.h"
#include "app/gui/recording/trace_format.h"

namespace servescope::gui {
namespace {

constexpr int kMaxAfterMs = 10 * 60 * 1000;

int whole_number(const std::string& option, const std::string& text, int min, int max) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty() || value < min ||
      value > max) {
    throw GuiUsageError(option + " needs a whole number from " + std::to_string(min) + " to " +
                        std::to_string(max) + ", got '" + text + "'");
  }
  return value;
}

double decimal_number(const std::string& option, const std::string& text, double min,
                      double max) {
  double value = 0.0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty() ||
      !(value >= min && value <= max)) {
    std::ostringstream bounds;
    bounds << option << " needs a number from " << min << " to " << max << ", got '" << text
           << "'";
    throw GuiUsageError(bounds.str());
  }
  return value;
}

// A file the program will write: its folder must exist.
void check_output_folder(const std::string& option, const std::string& file) {
  const std::filesystem::path path(file);
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";
  if (!std::filesystem::is_directory(folder)) {
    throw GuiUsageError(option + " " + file + ": folder " + folder.string() + " does not exist");
  }
}

// --remote's address: http or https, a host (a name, an IPv4 address, or an IPv6 one in
// brackets), a port where one is given, and no path (the server's endpoints are
// /v1/completions, /metrics, /slots).
void check_server_address(const std::string& address) {
  const auto refuse = [&address] {
    throw GuiUsageError("--remote '" + address +
                        "' is not a server's address; give one such as http://127.0.0.1:8080");
  };
  std::string_view rest = address;
  for (const std::string_view scheme : {"http://", "https://"}) {
    if (rest.starts_with(scheme)) rest.remove_prefix(scheme.size());
  }
  if (rest.size() == address.size()) refuse();
  if (rest.ends_with('/')) rest.remove_suffix(1);
  std::string_view host = rest, port;
  if (rest.starts_with('[')) {  // [IPv6]:port
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) refuse();
    host = rest.substr(1, close - 1);
    rest.remove_prefix(close + 1);
    if (!rest.empty() && rest.front() != ':') refuse();
    if (!rest.empty()) port = rest.substr(1);
    if (host.empty() || host.find_first_not_of("0123456789abcdefABCDEF:") != host.npos) refuse();
  } else {
    const size_t colon = rest.find(':');
    host = rest.substr(0, colon);
    if (colon != std::string_view::npos) port = rest.substr(colon + 1);
    if (host.empty() || host.find_first_not_of(
                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") !=
                            host.npos) {
      refuse();
    }
  }
  if (rest.find(':') != std::string_view::npos && port.empty()) refuse();
  if (port.size() > 5 || port.find_first_not_of("0123456789") != port.npos) refuse();
}

// A replay runs no engine: the options that drive one are refused, naming the first given.
void check_replay(const GuiOptions& options) {
  if (options.record) {
    throw GuiUsageError("--record and --replay: a replay runs no engine to record; choose one");
  }
  if (options.demo_prompt) {
    throw GuiUsageError("--demo generates live and --replay plays a recording; choose one");
  }
  const std::pair<bool, const char*> live_only[] = {
      {options.classmates > 0, "--classmates"},
      {options.samples.has_value(), "--samples"},
      {options.sweep, "--sweep"},
      {options.model.has_value(), "--model"},
      {options.backend.has_value(), "--backend"},
      {options.device.has_value(), "--device"},
      {options.static_batching.has_value(), "--batching"},
      {options.batch_wait_ms.has_value(), "--batch-wait"},
      {options.quantised_activations.has_value(), "--activations"},
      {options.run_step, "--run"},
      {options.quant_types.has_value(), "--quant-types"},
      {options.quant_block.has_value(), "--quant-block"},
  };
  for (const auto& [given, name] : live_only) {
    if (given) {
      throw GuiUsageError(std::string(name) +
                          " needs a live engine; --replay plays a recorded run without one");
    }
  }
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

}  // namespace

std::string gui_usage() {
  return "usage: servescope [--reset] [--model PATH] [--backend cpu|vulkan] [--device N]\n"
         "                  [--theme dark|light] [--overlay] [--batching continuous|static]\n"
         "                  [--batch-wait MS] [--activations f32|q8_0]\n"
         "       servescope --demo PROMPT [--classmates 0-" +
         std::to_string(app::kMaxClassmates) +
         "] [--samples 1-" + std::to_string(app::kMaxSamples) + "] [--panel " +
         panel_keys("|") +
         "]\n"
         "                  [--screenshot OUT.png] [--after-ms MS] [--model PATH] "
         "[--backend cpu|vulkan]\n"
         "                  [--device N] [--theme dark|light] [--overlay] [--sweep]\n"
         "                  [--lesson ID [--step N] [--run] [--learn-tab "
         "lesson|practice|flashcards]\n"
         "                   [--question N [--answer TEXT]] [--lecture]]\n"
         "                  [--quant-types f16,q8_0,... (the lab's variants)] "
         "[--quant-block TYPE (its block tab)]\n"
         "                  [--here-and-there (the screenshot is of View > Here and there)]\n"
         "       servescope --record RUN.sstrace [--demo PROMPT ...]   (the run written down)\n"
         "       servescope --replay RUN.sstrace [--speed 0.1-16] [--panel P] [--screenshot "
         "OUT.png]\n"
         "                  [--after-ms MS] [--lesson ID [--step N] [--lecture]] [--theme "
         "dark|light]\n"
         "                  (a recorded run played into the panels, no engine)\n"
         "       servescope --remote http://HOST:PORT [--demo PROMPT --classmates N --panel P "
         "...]\n"
         "                  (attached to a real serving engine: llama-server, vLLM)\n"
         "       servescope --check-lessons [DIR]   (no window: validate lesson files)\n"
         "       servescope --run-lessons [DIR] [--lesson ID]... [--json]\n"
         "                  (headless, CPU: run every step's experiment, check its expect "
         "conditions)\n"
         "       servescope --export-report FILE.html   (no window: your lab report as "
         "FILE.html and FILE.pdf)\n";
}

GuiOptions parse_gui_options(const std::vector<std::string>& args) {
  GuiOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& name = args[i];
    const auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw GuiUsageError(name + " needs a value");
      return args[++i];
    };
    if (name == "--help" || name == "-h") {
      options.help = true;
    } else if (name == "--check-lessons") {
      const bool has_dir = i + 1 < args.size() && !args[i + 1].starts_with("-");
      options.check_lessons = has_dir ? args[++i] : std::string();
    } else if (name == "--run-lessons") {
      const bool has_dir = i + 1 < args.size() && !args[i + 1].starts_with("-");
      options.run_lessons = has_dir ? args[++i] : std::string();
    } else if (name == "--export-report") {
      options.export_report = value();
    } else if (name == "--json") {
      options.json = true;
    } else if (name == "--reset") {
      options.reset = true;
    } else if (name == "--overlay") {
      options.overlay = true;
    } else if (name == "--here-and-there") {
      options.here_and_there = true;
    } else if (name == "--sweep") {
      options.sweep = true;
    } else if (name == "--lesson") {
      options.lesson = value();
      options.lesson_ids.push_back(*options.lesson);
    } else if (name == "--step") {
      options.step = whole_number(name, value(), 1, 99);
    } else if (name == "--run") {
      options.run_step = true;
    } else if (name == "--quant-types") {
      options.quant_types = value();
      const std::vector<std::string> offered = lab_type_choices();
      std::stringstream list(*options.quant_types);
      for (std::string type; std::getline(list, type, ',');) {
        if (std::find(offered.begin(), offered.end(), type) == offered.end()) {
          throw GuiUsageError("--quant-types: '" + type + "' is not one of " +
                              join(offered, ", "));
        }
      }
    } else if (name == "--quant-block") {
      options.quant_block = value();
      const std::vector<std::string> offered = block_picture_types();
      if (std::find(offered.begin(), offered.end(), *options.quant_block) == offered.end()) {
        throw GuiUsageError("--quant-block '" + *options.quant_block + "': choose one of " +
                            join(offered, ", "));
      }
    } else if (name == "--learn-tab") {
      options.learn_tab = value();
      if (*options.learn_tab != "lesson" && *options.learn_tab != "practice" &&
          *options.learn_tab != "flashcards") {
        throw GuiUsageError("--learn-tab '" + *options.learn_tab +
                            "': choose lesson, practice or flashcards");
      }
    } else if (name == "--question") {
      options.question = whole_number(name, value(), 1, 999);
    } else if (name == "--answer") {
      options.answer = value();
    } else if (name == "--lecture") {
      options.lecture = true;
    } else if (name == "--demo") {
      options.demo_prompt = value();
      if (options.demo_prompt->empty()) throw GuiUsageError("--demo needs a non-empty prompt");
    } else if (name == "--classmates" || name == "--clients") {  // --clients: its first name
      options.classmates = whole_number(name, value(), 0, app::kMaxClassmates);
    } else if (name == "--samples") {
      options.samples = whole_number(name, value(), 1, app::kMaxSamples);
    } else if (name == "--panel") {
      const std::string& key = value();
      options.panel = parse_panel_key(key);
      if (!options.panel) {
        throw GuiUsageError("--panel '" + key + "' is not a panel; choose one of: " +
                            panel_keys(", "));
      }
    } else if (name == "--screenshot") {
      options.screenshot = value();
      check_output_folder(name, *options.screenshot);
    } else if (name == "--record") {
      options.record = value();
      check_output_folder(name, *options.record);
    } else if (name == "--replay") {
      options.replay = value();
    } else if (name == "--remote") {
      options.remote = value();
      check_server_address(*options.remote);
    } else if (name == "--speed") {
      options.replay_speed = decimal_number(name, value(), kMinReplaySpeed, kMaxReplaySpeed);
    } else if (name == "--after-ms") {
      options.after_ms = whole_number(name, value(), 0, kMaxAfterMs);
    } else if (name == "--model") {
      options.model = value();
      if (!std::filesystem::is_regular_file(*options.model)) {
        throw GuiUsageError("--model " + *options.model + " is not a file");
      }
    } else if (name == "--backend") {
      options.backend = value();
      if (*options.backend != "cpu" && *options.backend != "vulkan") {
        throw GuiUsageError("--backend '" + *options.backend + "': choose cpu or vulkan");
      }
    } else if (name == "--device") {
      options.device = whole_number(name, value(), 0, 64);
    } else if (name == "--batching") {
      const std::string& policy = value();
      if (policy != "continuous" && policy != "static") {
        throw GuiUsageError("--batching '" + policy + "': choose continuous or static");
      }
      options.static_batching = policy == "static";
    } else if (name == "--batch-wait") {
      options.batch_wait_ms = whole_number(name, value(), 0, app::kMaxBatchWaitMs);
    } else if (name == "--activations") {
      const std::string& type = value();
      if (type != "f32" && type != "q8_0") {
        throw GuiUsageError("--activations '" + type + "': choose f32 or q8_0");
      }
      options.quantised_activations = type == "q8_0";
    } else if (name == "--theme") {
      const std::string& theme = value();
      if (theme == "dark") {
        options.theme = ThemeChoice::kDark;
      } else if (theme == "light") {
        options.theme = ThemeChoice::kLight;
      } else {
        throw GuiUsageError("--theme '" + theme + "': choose dark or light");
      }
    } else {
      throw GuiUsageError("unknown option '" + name + "'; see servescope --help");
    }
  }
  if (options.run_lessons) {
    const size_t allowed = (options.run_lessons->empty() ? 1u : 2u) +
                           2 * options.lesson_ids.size() + (options.json ? 1u : 0u);
    if (args.size() != allowed) {
      throw GuiUsageError("--run-lessons [DIR] takes only --lesson ID and --json");
    }
    return options;
  }
  if (options.json) throw GuiUsageError("--json needs --run-lessons");
  if (options.export_report && args.size() != 2) {
    throw GuiUsageError("--export-report FILE.html takes no other options");
  }
  if (options.replay) check_replay(options);
  if (options.remote && (options.replay || options.lesson || options.sweep || options.quant_types)) {
    throw GuiUsageError(
        "--remote runs on a server, which has no --replay, lessons, --sweep or quantisation lab "
        "here; leave those out");
  }
  if (options.replay_speed != 1.0 && !options.replay) throw GuiUsageError("--speed needs --replay");
  const bool demo_only = options.classmates > 0 || options.samples || options.panel ||
                         options.screenshot ||
                         options.sweep || options.lesson || options.lecture ||
                         options.quant_types || options.quant_block;
  if (demo_only && !options.demo_prompt && !options.replay) {
    throw GuiUsageError(
        "--classmates, --samples, --panel, --screenshot, --sweep, --lesson, --lecture, "
        "--quant-types and --quant-block need --demo PROMPT (or, the view options, --replay "
        "FILE)");
  }
  const bool lesson_only = options.step != 1 || options.run_step || options.learn_tab ||
                           options.question || options.answer;
  if (lesson_only && !options.lesson) {
    throw GuiUsageError("--step, --run, --learn-tab, --question and --answer need --lesson ID");
  }
  if (options.answer && !options.question) throw GuiUsageError("--answer needs --question N");
  if (options.check_lessons && args.size() > (options.check_lessons->empty() ? 1u : 2u)) {
    throw GuiUsageError("--check-lessons [DIR] takes no other options");
  }
  return options;
}

}  // namespace servescope::gui
