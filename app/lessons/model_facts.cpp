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
  for (const std::string& label : weight_type_names()) {
    const gguf::GgmlType target = eval::parse_weight_type(label);
    uint64_t bytes = 0;
    for (const gguf::TensorInfo& tensor : file.tensors()) {
      const gguf::GgmlType type =
          eval::takes_target_type(tensor, target) ? target : gguf::GgmlType::F32;
      bytes += gguf::row_bytes(type, tensor.shape.at(0)) * static_cast<uint64_t>(tensor.rows());
    }
    facts.weight_bytes_by_type[label] = bytes;
  }
  return facts;
}

ModelFacts model_facts(const std::filesystem::path& gguf_path) {
  return model_facts(gguf::GgufFile::open(gguf_path));
}

}  // namespace servescope::lessons
