// Where a model comes from, as GGUF's `general.*` keys say (llama.cpp's naming): name,
// author, licence, URLs, the quantisation version, and whether a chat template is included.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/gguf/gguf_file.h"

namespace servescope::model {

struct ModelProvenance {
  std::string name;        // general.name
  std::string author;      // general.author
  std::string license;     // general.license
  std::string url;         // general.url: the model's own page
  std::string source_url;  // general.source.url: what it was converted from
  std::optional<uint32_t> quantization_version;  // general.quantization_version
  bool has_chat_template = false;                // tokenizer.chat_template present
};

// Reads the keys above; a key that is absent, or of another type than llama.cpp writes (a
// string, a uint32 for the version), is left empty: these keys only inform, so a file with an
// odd value still loads.
ModelProvenance read_provenance(const gguf::GgufFile& file);

}  // namespace servescope::model
