// A copy of a GGUF model written with the repo's own writer, the same tensors with metadata
// values or an F32 tensor's weights changed on the way: a test model that declares a 128k
// context or names another pre-tokeniser, a tokenizer that lists fewer tokens than the
// embedding has rows, NaN weights.
#pragma once

#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"

namespace servescope::testing_support {

struct GgufEdits {
  std::function<void(const std::string& key, gguf::Value& value)> metadata;
  std::function<void(const std::string& tensor, std::vector<float>& weights)> f32_tensor;
};

inline void write_edited_copy(const std::string& source, const std::string& path,
                              const GgufEdits& edits) {
  const gguf::GgufFile file = gguf::GgufFile::open(source);
  gguf::GgufWriter writer(file.version());
  for (auto [key, value] : file.metadata()) {
    if (edits.metadata) edits.metadata(key, value);
    writer.set(key, std::move(value));
  }
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (t.type == gguf::GgmlType::F32 && edits.f32_tensor) {
      std::vector<float> weights(static_cast<size_t>(t.n_elements()));
      std::memcpy(weights.data(), t.data, t.n_bytes);
      edits.f32_tensor(t.name, weights);
      writer.add_tensor_f32(t.name, t.type, t.shape, weights);
    } else {
      writer.add_tensor(t.name, t.type, t.shape, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
    }
  }
  writer.write(path);
}

// The copy with `changed_keys` set anew (added where the source lacks them).
inline void write_gguf_copy(const std::string& source_path,
                            const std::map<std::string, gguf::Value>& changed_keys,
                            const std::string& out_path) {
  const auto source = gguf::GgufFile::open(source_path);
  gguf::GgufWriter writer(source.version());
  for (const auto& [key, value] : source.metadata()) writer.set(key, value);
  for (const auto& [key, value] : changed_keys) writer.set(key, value);
  for (const gguf::TensorInfo& t : source.tensors()) {
    writer.add_tensor(t.name, t.type, t.shape, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  }
  writer.write(out_path);
}

// The tokenizer's per-token arrays lose their last `dropped` entries; the embedding keeps
// its rows.
inline GgufEdits fewer_tokens(size_t dropped) {
  GgufEdits edits;
  edits.metadata = [dropped](const std::string& key, gguf::Value& value) {
    if (key != "tokenizer.ggml.tokens" && key != "tokenizer.ggml.scores" &&
        key != "tokenizer.ggml.token_type") {
      return;
    }
    gguf::Array items = value.as_array();
    items.items.resize(items.items.size() - dropped);
    value = gguf::Value::array(items.element_type, std::move(items.items));
  };
  return edits;
}

}  // namespace servescope::testing_support
