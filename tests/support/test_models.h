// The committed test models (tests/data/models/NAME.gguf, with PyTorch golden logits in
// NAME.json, written by tools/golden/make_models.py): every weight type and architecture the
// engine runs. The golden tests check each on the CPU backend, the Vulkan tests against it.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace servescope::testing_support {

inline const std::vector<std::string>& test_model_names() {
  static const std::vector<std::string> names = {
      "llama-f32",  "llama-f16",  "llama-q8_0", "llama-q4_0", "llama-tied-f32",
      "gpt2-f32",   "gpt2-f16",   "gpt2-q8_0",  "gpt2-q4_0",  "llama-q4_1",
      "llama-q5_0", "llama-q5_1", "llama-bf16", "llama-q2_k", "llama-q3_k",
      "llama-q4_k", "llama-q5_k", "llama-q6_k", "qwen2-f32",  "llama-ropescale-f32",
      "phi3-f32",   "gemma-f32",  "gemma2-f32", "gemma3-f32"};
  return names;
}

// A gtest parameter name from a model name: "llama-q4_0" -> "llama_q4_0".
inline std::string test_model_param_name(std::string name) {
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

}  // namespace servescope::testing_support
