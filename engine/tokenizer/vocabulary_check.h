// Consistency checks of a Vocabulary, shared by the GGUF reader and make_tokenizer().
#pragma once

#include <string_view>

#include "engine/tokenizer/tokenizer.h"

namespace servescope {

// Returns `vocabulary` with empty scores / types filled in (0.0 / kNormal). Throws
// ModelError(kBadTokenizer), message "<source>: <key> ...", if it is inconsistent.
Vocabulary checked_vocabulary(Vocabulary vocabulary, std::string_view source);

}  // namespace servescope
