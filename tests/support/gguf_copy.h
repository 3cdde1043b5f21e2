// A copy of a GGUF file with some metadata keys set anew and the same tensors: e.g. a test model
// that declares a 128k context, or names another pre-tokeniser.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"

namespace servescope::testing_support {

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

}  // namespace servescope::testing_support
