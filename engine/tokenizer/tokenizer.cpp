#include "engine/tokenizer/tokenizer.h"

#include <utility>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/byte_level_bpe_tokenizer.h"
#include "engine/tokenizer/sentencepiece_bpe_tokenizer.h"
#include "engine/tokenizer/vocabulary_check.h"

namespace servescope {

Tokenizer::Tokenizer(Vocabulary vocabulary, std::string_view source)
    : vocabulary_(checked_vocabulary(std::move(vocabulary), source)) {}

std::vector<int32_t> Tokenizer::encode_with_bos(std::string_view text) const {
  std::vector<int32_t> ids;
  if (vocabulary_.add_bos && vocabulary_.bos_id >= 0) ids.push_back(vocabulary_.bos_id);
  const std::vector<int32_t> body = encode(text);
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
