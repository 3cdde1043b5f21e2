// The subcommands of servescope-cli. Each writes one JSON document to stdout (generate without
// --json writes the story text instead) and human messages to stderr.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace servescope::cli {

struct Subcommand {
  std::string name;
  std::string summary;
  int (*run)(const std::vector<std::string>& args, std::ostream& out);
};

// All subcommands, in the order --help lists them.
const std::vector<Subcommand>& subcommands();

// The model used when no --model is given.
std::string default_model_path();

}  // namespace servescope::cli
