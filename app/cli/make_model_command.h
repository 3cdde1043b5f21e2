// servescope-cli make-model: a llama model of a chosen size with random weights, for timing.
#pragma once

#include <filesystem>
#include <functional>

#include "app/cli/commands.h"
#include "engine/eval/random_model.h"

namespace servescope::cli {

Subcommand make_model_subcommand();

// Writes the random-weight model `spec` with the tokenizer of the model at `tokenizer_path` to
// `out` (through "<out>.partial", so a failed write leaves nothing behind). Refuses, before
// writing anything, an output folder that is missing or unwritable and a disk without room for
// the file (UsageError); a failing write throws with the system's reason. `before_write` runs
// once the checks passed, just before the first byte is written.
void write_random_model(const eval::RandomModelSpec& spec,
                        const std::filesystem::path& tokenizer_path,
                        const std::filesystem::path& out,
                        const std::function<void()>& before_write = {});

}  // namespace servescope::cli
