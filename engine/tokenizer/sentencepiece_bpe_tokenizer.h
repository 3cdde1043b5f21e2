// The "llama" tokenizer: SentencePiece BPE with byte fallback, as llama.cpp's SPM tokenizer.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "engine/tokenizer/piece_index.h"
#include "engine/tokenizer/tokenizer.h"

namespace servescope {

class SentencePieceBpeTokenizer final : public Tokenizer {
 public:
  SentencePieceBpeTokenizer(Vocabulary vocabulary, std::string_view source);

  std::string token_bytes(int32_t id) const override;

 protected:
  // Spaces become U+2581 (and one is put in front when add_space_prefix, as llama.cpp does
  // for every stretch of text, also one after a parsed special token); then adjacent
  // symbols merge, highest-scoring vocabulary piece first; symbols left that are not pieces
  // fall back to one <0xNN> token per byte (or the unknown token when there is none).
  void encode_text(std::string_view text, std::vector<int32_t>& ids) const override;
  bool decode_drops_leading_space(int32_t id) const override;

 private:
  void append_byte_fallback(std::string_view symbol, std::vector<int32_t>& ids) const;

  PieceIndex mergeable_pieces_;             // normal and user-defined pieces
  std::array<int32_t, 256> byte_tokens_{};  // <0xNN> token of each byte, -1 if none
  std::vector<std::string> token_bytes_;    // decoded text of every token
};

}  // namespace servescope
