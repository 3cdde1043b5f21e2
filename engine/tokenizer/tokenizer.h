// Tokenizers built from the tokenizer.ggml.* metadata of a GGUF file:
//   "llama"  SentencePiece BPE with byte fallback (as llama.cpp's SPM tokenizer)
//   "gpt2"   byte-level BPE, pre-tokenised as tokenizer.ggml.pre names (pretokenizer.h)
// Text is UTF-8. Special tokens written in the text (e.g. "<s>") are encoded as plain text
// unless the caller asks for them to be parsed (SpecialTokens::kParse).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace servescope {

namespace gguf {
class GgufFile;
}

// Values of tokenizer.ggml.token_type (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// What tokenizer.ggml.* metadata holds. scores and types may be left empty (all 0.0 /
// all kNormal); otherwise they have one entry per token.
struct Vocabulary {
  std::string model;  // "llama" or "gpt2"
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<TokenType> types;
  std::vector<std::string> merges;  // gpt2: "left right", highest priority (rank 0) first
  std::string pre;                  // gpt2: tokenizer.ggml.pre, "" when absent (GPT-2's)
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t unknown_id = -1;
  // llama.cpp's defaults for "llama" (set add_bos = false by hand for a gpt2 vocabulary);
  // vocabulary_from_gguf() uses false for both when a "gpt2" file lacks the keys.
  // The gpt2 tokenizer ignores add_space_prefix.
  bool add_bos = true;
  bool add_space_prefix = true;
};

// Reads tokenizer.ggml.*. Throws ModelError naming the file and the key: kMissingMetadata
// if model or tokens (or gpt2's merges) are absent, kBadTokenizer if a value has the wrong
// type, array lengths disagree, or a token id is out of range.
Vocabulary vocabulary_from_gguf(const gguf::GgufFile& file);

// What encode() does with the text of a control or user-defined token (e.g. "<|endoftext|>"
// or "<s>") written in the input: tokenise it as plain text (the safe choice for user text,
// which must not be able to forge a turn boundary), or match it as that one token (for
// templates written by the program, as `tokenize --parse-special`). Where special tokens
// overlap, the longest one starting at the earliest position wins.
enum class SpecialTokens { kAsText, kParse };

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Token ids of `text`, without BOS. Throws InputError naming the byte offset of invalid UTF-8.
  std::vector<int32_t> encode(std::string_view text,
                              SpecialTokens special = SpecialTokens::kAsText) const;
  // encode(), preceded by BOS when the vocabulary asks for it (add_bos and a BOS id).
  std::vector<int32_t> encode_with_bos(std::string_view text,
                                       SpecialTokens special = SpecialTokens::kAsText) const;

  // The raw bytes token `id` stands for in text (control tokens: none; a byte token: one
  // byte, possibly part of a multi-byte character). Throws InputError if id is out of range.
  virtual std::string token_bytes(int32_t id) const = 0;
  // Concatenated token_bytes; llama drops the space that add_space_prefix put in front.
  std::string decode(std::span<const int32_t> ids) const;

  const std::string& piece(int32_t id) const;  // the vocabulary string; InputError if out of range
  const Vocabulary& vocabulary() const { return vocabulary_; }
  int32_t size() const { return static_cast<int32_t>(vocabulary_.tokens.size()); }

 protected:
  // Checks the vocabulary (ModelError naming `source` and the key at fault).
  Tokenizer(Vocabulary vocabulary, std::string_view source);
  // Token ids of plain text (valid UTF-8, no special tokens parsed), appended to `ids`.
  virtual void encode_text(std::string_view text, std::vector<int32_t>& ids) const = 0;
  void check_id(int32_t id) const;  // InputError if id is not a token of this vocabulary
  // The special token whose text starts at byte `pos` of `text` (the longest), or -1.
  int32_t special_token_at(std::string_view text, size_t pos) const;
  TokenType type_of(int32_t id) const { return vocabulary_.types[id]; }
  // Whether decode() drops the first byte (a space) when `id` is the first token with bytes.
  virtual bool decode_drops_leading_space(int32_t id) const;

 private:
  Vocabulary vocabulary_;  // validated, scores and types filled in
  // Control and user-defined tokens by their first byte, longest first (for kParse).
  std::array<std::vector<int32_t>, 256> special_by_first_byte_;
};

// The tokenizer that vocabulary.model names ("llama" or "gpt2"). Throws
// ModelError(kBadTokenizer) for another model (listing the supported ones) or for an
// inconsistent vocabulary; load_tokenizer's messages also name the file.
std::unique_ptr<Tokenizer> make_tokenizer(Vocabulary vocabulary);
std::unique_ptr<Tokenizer> load_tokenizer(const gguf::GgufFile& file);

// Turns generated token ids into text as they arrive: push() returns only complete UTF-8
// characters; bytes of a character split across tokens are held until a later token
// completes it. Ill-formed bytes become U+FFFD. Unlike decode(), no leading space is
// dropped: a stream continues a prompt.
class TextStreamDecoder {
 public:
  explicit TextStreamDecoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  std::string push(int32_t id);
  // Whatever is still held, with an incomplete character replaced by U+FFFD; resets.
  std::string finish();

 private:
  const Tokenizer& tokenizer_;
  std::string pending_;  // bytes of a character not yet complete
};

}  // namespace servescope
