// The "gpt2" tokenizer: byte-level BPE. Text is split into words by GPT-2's pattern, each
// word's bytes are spelled with GPT-2's printable stand-in characters, and adjacent symbols
// merge by rank (the lowest-ranked merge first) until none applies.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "engine/tokenizer/piece_index.h"
#include "engine/tokenizer/tokenizer.h"

namespace servescope {

class ByteLevelBpeTokenizer final : public Tokenizer {
 public:
  // Throws ModelError(kBadTokenizer) if a merge is malformed or names tokens not in the
  // vocabulary, or a byte has no token.
  ByteLevelBpeTokenizer(Vocabulary vocabulary, std::string_view source);

  std::vector<int32_t> encode(std::string_view text) const override;
  std::string token_bytes(int32_t id) const override;

 private:
  void encode_word(std::string_view word, std::vector<int32_t>& ids) const;

  PieceIndex token_ids_;
  PieceIndex merge_ranks_;                // "left right" -> rank
  std::array<std::string, 256> byte_chars_;  // each byte's stand-in character, UTF-8
  std::vector<std::string> token_bytes_;  // decoded bytes of every token
};

}  // namespace servescope
