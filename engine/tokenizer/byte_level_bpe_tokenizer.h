// The "gpt2" tokenizer: byte-level BPE. Text is split into words by the pre-tokeniser that
// tokenizer.ggml.pre names, each word's bytes are spelled with GPT-2's printable stand-in
// characters, and adjacent symbols merge by rank (the lowest-ranked merge first) until none
// applies.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "engine/tokenizer/piece_index.h"
#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/tokenizer.h"

namespace servescope {

class ByteLevelBpeTokenizer final : public Tokenizer {
 public:
  // Throws ModelError(kBadTokenizer) if a merge is malformed or names tokens not in the
  // vocabulary, a byte has no token, or tokenizer.ggml.pre names an unknown pre-tokeniser.
  ByteLevelBpeTokenizer(Vocabulary vocabulary, std::string_view source);

  std::string token_bytes(int32_t id) const override;

 protected:
  void encode_text(std::string_view text, std::vector<int32_t>& ids) const override;

 private:
  void encode_word(std::string_view word, std::vector<int32_t>& ids) const;

  const PreTokenizer& pre_tokenizer_;
  PieceIndex token_ids_;
  PieceIndex merge_ranks_;                   // "left right" -> rank
  std::array<std::string, 256> byte_chars_;  // each byte's stand-in character, UTF-8
  std::vector<std::string> token_bytes_;     // decoded bytes of every token
};

}  // namespace servescope
