// Generated numeric questions: the answer computed from the loaded model's real configuration
// by the engine's own formulas (serving::kv_bytes_per_token on serving::kv_layout, GGML's row
// sizes, ...), so a question says exactly what running it will measure.
#pragma once

#include <map>
#include <string>

#include "app/lessons/lesson.h"
#include "app/lessons/model_facts.h"

namespace servescope::lessons {

// What the window has measured, by measure name (vocabulary.h); absent when not measured yet.
using Measurements = std::map<std::string, double>;

struct GeneratedAnswer {
  std::string generator;
  double value = 0;
  std::string unit;
  // Every parameter with defaults filled in and `measured` replaced by the number used.
  std::map<std::string, std::string> params;
  // Intermediate values for the working ({{calc.NAME}}), in the generator's own units.
  std::map<std::string, double> calc;
};

// InputError naming the problem when the generator is unknown or a parameter is missing,
// unknown or invalid (`measured` is accepted where the parameter allows it).
void check_generator_params(const std::string& generator,
                            const std::map<std::string, std::string>& params);

// Runs the question's generator on the model. InputError naming the parameter when a
// parameter is missing or invalid, when `measured` is asked for and not measured yet, or when
// the result would be meaningless (memory that does not hold the weights).
GeneratedAnswer generate_answer(const std::string& generator,
                                const std::map<std::string, std::string>& params,
                                const ModelFacts& model, const Measurements& measured = {});
GeneratedAnswer generate_answer(const Question& question, const ModelFacts& model,
                                const Measurements& measured = {});

}  // namespace servescope::lessons
