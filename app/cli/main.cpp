// servescope-cli: the engine from the command line. JSON on stdout, messages on stderr,
// a non-zero exit code with a one-line reason on bad input.
#include <iostream>
#include <string>
#include <vector>

#include "app/cli/cli_options.h"
#include "app/cli/commands.h"
#include "engine/core/error.h"

namespace {

void print_help(std::ostream& out) {
  out << "usage: servescope-cli SUBCOMMAND [options]\n\nsubcommands:\n";
  for (const auto& command : servescope::cli::subcommands()) {
    out << "  " << command.name << "  " << command.summary << "\n";
  }
  out << "\noptions for every subcommand:\n"
         "  --model PATH       GGUF model (default: "
      << servescope::cli::default_model_path()
      << ")\n"
         "  --backend cpu|vulkan\n"
         "  --device N         Vulkan device index\n"
         "  --threads N        CPU backend threads (default: the physical cores)\n"
         "  --activations f32|q8_0  CPU, Q8_0/Q5_0/Q4_0/Q6_K/Q4_K weights: exact float\n"
         "                     activations (default) or 8-bit activations with integer dot\n"
         "                     products (as llama.cpp)\n";
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_help(args.empty() ? std::cerr : std::cout);
    return args.empty() ? 2 : 0;
  }
  for (const auto& command : servescope::cli::subcommands()) {
    if (command.name != args[0]) continue;
    try {
      return command.run({args.begin() + 1, args.end()}, std::cout);
    } catch (const servescope::cli::UsageError& e) {
      std::cerr << "servescope-cli " << args[0] << ": " << e.what() << "\n";
      return 2;
    } catch (const servescope::Error& e) {
      std::cerr << "servescope-cli " << args[0] << ": " << e.what() << "\n";
      return 1;
    } catch (const std::exception& e) {
      std::cerr << "servescope-cli " << args[0] << ": internal error: " << e.what() << "\n";
      return 3;
    }
  }
  std::cerr << "servescope-cli: unknown subcommand '" << args[0] << "'; see --help\n";
  return 2;
}
