// Pre-tokenisation of byte-level BPE: the text is cut into words before BPE merges run inside
// each word. GGUF names the scheme in tokenizer.ggml.pre; each scheme is a list of regular
// expressions applied in turn (as llama.cpp and Hugging Face's Sequence pre-tokenisers do):
// every expression splits every piece left by the one before into its matches and the text
// between them, so no byte is dropped and the pieces concatenate to the text.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/regex.h"

namespace servescope {

class PreTokenizer {
 public:
  // The scheme that tokenizer.ggml.pre names; "" (key absent) is GPT-2's. Throws
  // ModelError(kBadTokenizer) naming the value and the supported names.
  static const PreTokenizer& named(std::string_view pre);
  // Every accepted tokenizer.ggml.pre value, and the schemes (one name each, the first of
  // the names that share its expressions).
  static std::vector<std::string> supported_names();
  static std::vector<std::string> scheme_names();

  // `text` must be valid UTF-8. The pieces are views into it and concatenate to it.
  std::vector<std::string_view> split(std::string_view text) const;

  const std::string& name() const { return name_; }
  // Whether a whole word that is itself a token skips the merges (llama 3's tokenizer.json
  // "ignore_merges"; llama.cpp does the same for these schemes).
  bool ignore_merges() const { return ignore_merges_; }

  PreTokenizer(std::string name, const std::vector<std::string>& patterns, bool ignore_merges);

 private:
  std::string name_;
  std::vector<std::shared_ptr<const Regex>> stages_;
  bool ignore_merges_;
};

}  // namespace servescope
