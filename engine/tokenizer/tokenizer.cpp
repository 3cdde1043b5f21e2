#include "engine/tokenizer/tokenizer.h"

#include <algorithm>
#include <utility>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/byte_level_bpe_tokenizer.h"
#include "engine/tokenizer/sentencepiece_bpe_tokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "engine/tokenizer/vocabulary_check.h"

namespace servescope {
namespace {

bool is_well_formed(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const utf8::Step step = utf8::next(text, pos);
    if (step.kind != utf8::Step::Kind::kCharacter) return false;
    pos += step.length;
  }
  return true;
}

}  // namespace

Tokenizer::Tokenizer(Vocabulary vocabulary, std::string_view source)
    : vocabulary_(checked_vocabulary(std::move(vocabulary), source)) {
  for (int32_t id = 0; id < size(); ++id) {
    const std::string& text = vocabulary_.tokens[id];
    const bool special =
        type_of(id) == TokenType::kControl || type_of(id) == TokenType::kUserDefined;
    // Only whole characters: a match then never cuts the text inside a character.
    if (!special || text.empty() || !is_well_formed(text)) continue;
    special_by_first_byte_[static_cast<uint8_t>(text[0])].push_back(id);
  }
  for (std::vector<int32_t>& ids : special_by_first_byte_) {
    std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
      return vocabulary_.tokens[a].size() > vocabulary_.tokens[b].size();
    });
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, SpecialTokens special) const {
  utf8::validate(text);
  std::vector<int32_t> ids;
  if (special == SpecialTokens::kAsText) {
    encode_text(text, ids);
    return ids;
  }
  size_t plain_begin = 0;  // start of the text since the last special token
  for (size_t pos = 0; pos < text.size();) {
    const int32_t found = special_token_at(text, pos);
    if (found < 0) {
      ++pos;
      continue;
    }
    if (pos > plain_begin) encode_text(text.substr(plain_begin, pos - plain_begin), ids);
    ids.push_back(found);
    pos += vocabulary_.tokens[found].size();
    plain_begin = pos;
  }
  if (plain_begin < text.size()) encode_text(text.substr(plain_begin), ids);
  return ids;
}

int32_t Tokenizer::special_token_at(std::string_view text, size_t pos) const {
  for (const int32_t id : special_by_first_byte_[static_cast<uint8_t>(text[pos])]) {
    if (text.substr(pos).starts_with(vocabulary_.tokens[id])) return id;
  }
  return -1;
}

std::vector<int32_t> Tokenizer::encode_with_bos(std::string_view text,
                                                SpecialTokens special) const {
  std::vector<int32_t> ids;
  if (vocabulary_.add_bos && vocabulary_.bos_id >= 0) ids.push_back(vocabulary_.bos_id);
  const std::vector<int32_t> body = encode(text, special);
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string text;
  bool seen_bytes = false;
  for (const int32_t id : ids) {
    const std::string bytes = token_bytes(id);
    if (bytes.empty()) continue;
    const bool drop_space = !seen_bytes && decode_drops_leading_space(id);
    text.append(bytes, drop_space ? 1 : 0);
    seen_bytes = true;
  }
  return text;
}

const std::string& Tokenizer::piece(int32_t id) const {
  check_id(id);
  return vocabulary_.tokens[id];
}

void Tokenizer::check_id(int32_t id) const {
  if (id < 0 || id >= size()) {
    throw InputError("token id " + std::to_string(id) + " is outside the vocabulary of " +
                     std::to_string(size()) + " tokens");
  }
}

bool Tokenizer::decode_drops_leading_space(int32_t /*id*/) const { return false; }

namespace {

std::unique_ptr<Tokenizer> make_tokenizer_from(Vocabulary vocabulary, std::string_view source) {
  if (vocabulary.model == "llama") {
    return std::make_unique<SentencePieceBpeTokenizer>(std::move(vocabulary), source);
  }
  if (vocabulary.model == "gpt2") {
    return std::make_unique<ByteLevelBpeTokenizer>(std::move(vocabulary), source);
  }
  throw ModelError(ModelError::Kind::kBadTokenizer,
                   std::string(source) + ": tokenizer.ggml.model is \"" + vocabulary.model +
                       "\", which ServeScope does not support; supported: llama, gpt2");
}

}  // namespace

std::unique_ptr<Tokenizer> make_tokenizer(Vocabulary vocabulary) {
  return make_tokenizer_from(std::move(vocabulary), "tokenizer vocabulary");
}

std::unique_ptr<Tokenizer> load_tokenizer(const gguf::GgufFile& file) {
  return make_tokenizer_from(vocabulary_from_gguf(file), file.name());
}

}  // namespace servescope
