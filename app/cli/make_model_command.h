// servescope-cli make-model: a llama model of a chosen size with random weights, for timing.
#pragma once

#include "app/cli/commands.h"

namespace servescope::cli {

Subcommand make_model_subcommand();

}  // namespace servescope::cli
