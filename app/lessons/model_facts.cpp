#include "app/lessons/model_facts.h"

#include "app/lessons/vocabulary.h"
#include "engine/eval/quantize_model.h"
#include "engine/model/model.h"

namespace servescope::lessons {

ModelFacts model_facts(const gguf::GgufFile& file) {
  ModelFacts facts;
  facts.config = model::read_model_config(file);
  facts.name = facts.config.name.empty() ? std::filesystem::path(file.name()).filename().string()
                                         : facts.config.name;
  const model::WeightSummary summary = model::summarize_weights(file);
  facts.weight_bytes = summary.bytes;
  facts.parameters = summary.parameters;
  for (const gguf::TensorInfo& tensor : file.tensors()) {
    if (tensor.shape.size() != 2) continue;
    const std::string type = eval::weight_type_label(tensor.type);
    if (facts.weight_type.empty()) facts.weight_type = type;
    if (facts.weight_type != type) facts.weight_type = "mixed";
  }
  // Each tensor in the type quantize would store it in (fallbacks included), so a lesson's
  // size matches the file the window writes.
  for (const std::string& label : weight_type_names()) {
    const std::vector<gguf::GgmlType> types =
        eval::tensor_types(file, eval::parse_quantize_scheme(label));
    uint64_t bytes = 0;
    for (size_t i = 0; i < file.tensors().size(); ++i) {
      const gguf::TensorInfo& tensor = file.tensors()[i];
      bytes += gguf::row_bytes(types[i], tensor.shape.at(0)) * static_cast<uint64_t>(tensor.rows());
    }
    facts.weight_bytes_by_type[label] = bytes;
  }
  return facts;
}

ModelFacts model_facts(const std::filesystem::path& gguf_path) {
  return model_facts(gguf::GgufFile::open(gguf_path));
}

}  // namespace servescope::lessons
