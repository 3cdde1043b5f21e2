#include "engine/model/model.h"

#include "engine/core/error.h"

namespace servescope::model {

WeightSummary summarize_weights(const gguf::GgufFile& file) {
  WeightSummary s;
  for (const gguf::TensorInfo& t : file.tensors()) {
    s.parameters += t.n_elements();
    s.bytes += t.n_bytes;
    ++s.tensor_types[std::string(gguf::type_name(t.type))];
  }
  return s;
}

const Tokenizer& Model::require_tokenizer() const {
  if (!tokenizer) {
    throw InputError(file.name() +
                     " has no tokenizer metadata (tokenizer.ggml.*); pass token "
                     "ids with --ids instead of text");
  }
  return *tokenizer;
}

std::unique_ptr<Model> load_model(const std::filesystem::path& path,
                                  const compute::BackendChoice& backend_choice) {
  auto m =
      std::make_unique<Model>(Model{gguf::GgufFile::open(path), {}, nullptr, nullptr, nullptr});
  m->config = read_model_config(m->file);
  if (m->file.find("tokenizer.ggml.model") != nullptr) m->tokenizer = load_tokenizer(m->file);
  m->backend = compute::make_backend(backend_choice);
  m->transformer = std::make_unique<Transformer>(
      m->config, load_weights(m->file, m->config, *m->backend), *m->backend);
  return m;
}

}  // namespace servescope::model
