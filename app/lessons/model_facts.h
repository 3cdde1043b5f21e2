// What the lessons need to know about the loaded model: its configuration and the bytes of its
// weights, as loaded and as they would be in each weight type. Computed from the GGUF file's
// metadata and tensor table (nothing is uploaded or run).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_config.h"

namespace servescope::lessons {

struct ModelFacts {
  model::ModelConfig config;
  std::string name;           // general.name, else the file's name
  std::string weight_type;    // the matrices' type as loaded (f32, f16, q8_0, q4_0) or "mixed"
  uint64_t weight_bytes = 0;  // all tensor data as loaded
  int64_t parameters = 0;
  // Weight bytes if the file were re-encoded in that type ("f32", "f16", "q8_0", "q4_0"), as
  // eval::quantize_model does it: matrices whose rows are whole blocks take the type, the rest
  // F32.
  std::map<std::string, uint64_t> weight_bytes_by_type;
};

// ModelError / GgufError when the file is not a model ServeScope runs.
ModelFacts model_facts(const gguf::GgufFile& file);
ModelFacts model_facts(const std::filesystem::path& gguf_path);

}  // namespace servescope::lessons
