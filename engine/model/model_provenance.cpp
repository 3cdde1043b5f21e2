#include "engine/model/model_provenance.h"

#include <variant>

#include "engine/gguf/gguf_format.h"

namespace servescope::model {
namespace {

std::string string_or_empty(const gguf::GgufFile& file, const char* key) {
  const gguf::Value* value = file.find(key);
  if (value == nullptr) return {};
  const auto* text = std::get_if<std::string>(&value->data);
  return text != nullptr ? *text : std::string();
}

}  // namespace

ModelProvenance read_provenance(const gguf::GgufFile& file) {
  ModelProvenance p;
  p.name = string_or_empty(file, "general.name");
  p.author = string_or_empty(file, "general.author");
  p.license = string_or_empty(file, "general.license");
  p.url = string_or_empty(file, "general.url");
  p.source_url = string_or_empty(file, "general.source.url");
  if (const gguf::Value* version = file.find(gguf::kQuantizationVersionKey)) {
    if (const auto* v = std::get_if<uint32_t>(&version->data)) p.quantization_version = *v;
  }
  p.has_chat_template = file.find("tokenizer.chat_template") != nullptr;
  return p;
}

}  // namespace servescope::model
