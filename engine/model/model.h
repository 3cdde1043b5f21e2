// A model loaded from a GGUF file and ready to run on one backend.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "engine/compute/backend.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model_config.h"
#include "engine/model/transformer.h"
#include "engine/tokenizer/tokenizer.h"

namespace servescope::model {

// Size facts of the file, computed from its tensor table.
struct WeightSummary {
  int64_t parameters = 0;                       // elements of all tensors
  uint64_t bytes = 0;                           // bytes of all tensor data
  std::map<std::string, int64_t> tensor_types;  // type name -> number of tensors
};

WeightSummary summarize_weights(const gguf::GgufFile& file);

struct Model {
  gguf::GgufFile file;
  ModelConfig config;
  std::unique_ptr<Tokenizer> tokenizer;  // null when the file has no tokenizer metadata
  std::unique_ptr<compute::Backend> backend;
  std::unique_ptr<Transformer> transformer;

  // The tokenizer, or InputError saying the file has none.
  const Tokenizer& require_tokenizer() const;
};

// Opens, validates and uploads a model. Errors (GgufError, ModelError, BackendError) name the
// file and the problem.
std::unique_ptr<Model> load_model(const std::filesystem::path& path,
                                  const compute::BackendChoice& backend);

}  // namespace servescope::model
