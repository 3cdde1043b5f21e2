#include "engine/eval/variant_model.h"

#include "engine/eval/quantize_model.h"

namespace servescope::eval {

std::unique_ptr<model::Model> load_model_from_gguf(gguf::GgufFile file,
                                                   const compute::BackendChoice& backend) {
  auto m =
      std::make_unique<model::Model>(model::Model{std::move(file), {}, nullptr, nullptr, nullptr});
  m->config = model::read_model_config(m->file);
  if (m->file.find("tokenizer.ggml.model") != nullptr) m->tokenizer = load_tokenizer(m->file);
  m->backend = compute::make_backend(backend);
  m->transformer = std::make_unique<model::Transformer>(
      m->config, model::load_weights(m->file, m->config, *m->backend), *m->backend);
  return m;
}

std::unique_ptr<model::Model> load_quantised_variant(const gguf::GgufFile& source,
                                                     gguf::GgmlType target,
                                                     compute::BackendKind backend) {
  return load_quantised_variant(source, QuantizeScheme{target, QuantRecipe::kPure}, backend);
}

std::unique_ptr<model::Model> load_quantised_variant(const gguf::GgufFile& source,
                                                     const QuantizeScheme& scheme,
                                                     compute::BackendKind backend) {
  const gguf::GgufWriter writer = quantize_model(source, scheme);
  return load_model_from_gguf(
      gguf::GgufFile::from_bytes(writer.to_bytes(), source.name() + " as " + scheme_label(scheme)),
      backend);
}

}  // namespace servescope::eval
