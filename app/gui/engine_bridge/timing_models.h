// The random-weight timing models the window offers (servescope-cli make-model's presets, in
// F32 and Q4_0): large enough to leave the caches, so decode time against weight bytes shows
// the memory wall. Their text is meaningless. Each is written once into the user's cache
// folder and reused.
#pragma once

#include <QString>
#include <cstdint>
#include <vector>

#include "engine/eval/random_model.h"

namespace servescope::gui {

struct TimingModel {
  QString label;  // "25M", or a test's own name for a custom shape
  eval::RandomModelShape shape;
  QString type;  // "f32" or "q4_0", of the matrices
};

// 25M, 100M, 400M and 1B, each in F32 and Q4_0.
std::vector<TimingModel> timing_model_presets();

// "25M F32 (96.5 MiB)": the menu's words, with the weight bytes the file will hold (left out for a
// vocabulary size <= 0, unknown).
QString timing_model_title(const TimingModel& model, int64_t vocab_size);

// The folder inside a cache folder where timing models are kept: "<cache>/timing-models".
QString timing_models_folder(const QString& cache_folder);

// "<folder>/servescope-random-25M-f32.gguf".
QString timing_model_path(const QString& folder, const TimingModel& model);

// Weight bytes of the file, from the formula (alignment and metadata not counted).
uint64_t timing_model_weight_bytes(const TimingModel& model, int64_t vocab_size);

// Creates the folder and writes the model to `path` with the tokenizer of the model at
// `tokenizer_path`; an error (a folder that cannot be made, a full disk, a failed write) throws
// with a reason a person can act on and leaves no partial file behind.
void write_timing_model(const TimingModel& model, const QString& path,
                        const QString& tokenizer_path);

}  // namespace servescope::gui
