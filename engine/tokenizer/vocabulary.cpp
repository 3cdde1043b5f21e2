// Reading tokenizer.ggml.* metadata into a Vocabulary and checking it.
#include <cstdint>
#include <string>
#include <utility>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/vocabulary_check.h"

namespace servescope {
namespace {

using gguf::Value;
using gguf::ValueType;

constexpr std::string_view kModelKey = "tokenizer.ggml.model";
constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
constexpr std::string_view kScoresKey = "tokenizer.ggml.scores";
constexpr std::string_view kTypesKey = "tokenizer.ggml.token_type";
constexpr std::string_view kMergesKey = "tokenizer.ggml.merges";
constexpr std::string_view kPreKey = "tokenizer.ggml.pre";
constexpr std::string_view kBosKey = "tokenizer.ggml.bos_token_id";
constexpr std::string_view kEosKey = "tokenizer.ggml.eos_token_id";
constexpr std::string_view kUnknownKey = "tokenizer.ggml.unknown_token_id";
constexpr std::string_view kAddBosKey = "tokenizer.ggml.add_bos_token";
constexpr std::string_view kAddSpacePrefixKey = "tokenizer.ggml.add_space_prefix";

ModelError bad_tokenizer(std::string_view source, std::string_view key, const std::string& what) {
  return ModelError(ModelError::Kind::kBadTokenizer,
                    std::string(source) + ": " + std::string(key) + " " + what);
}

// Reads typed values of one file's metadata, naming the file and key on every error.
class MetadataReader {
 public:
  explicit MetadataReader(const gguf::GgufFile& file) : file_(file) {}

  const Value& required(std::string_view key, std::string_view why) const {
    const Value* value = file_.find(key);
    if (value == nullptr) {
      throw ModelError(ModelError::Kind::kMissingMetadata,
                       file_.name() + ": metadata key " + std::string(key) + " is missing; " +
                           std::string(why));
    }
    return *value;
  }

  std::string string(const Value& value, std::string_view key) const {
    if (value.type() != ValueType::kString) throw wrong_type(key, "a string", value);
    return value.as_string();
  }

  std::vector<std::string> strings(const Value& value, std::string_view key) const {
    const gguf::Array& array = array_of(value, key, "an array of strings",
                                        [](ValueType t) { return t == ValueType::kString; });
    std::vector<std::string> out;
    out.reserve(array.items.size());
    for (const Value& item : array.items) out.push_back(item.as_string());
    return out;
  }

  std::vector<float> floats(const Value& value, std::string_view key) const {
    const gguf::Array& array = array_of(value, key, "an array of floats", [](ValueType t) {
      return t == ValueType::kFloat32 || t == ValueType::kFloat64;
    });
    std::vector<float> out;
    out.reserve(array.items.size());
    for (const Value& item : array.items) out.push_back(static_cast<float>(item.as_float()));
    return out;
  }

  std::vector<TokenType> token_types(const Value& value, std::string_view key) const {
    const gguf::Array& array =
        array_of(value, key, "an array of integers", [](ValueType t) { return is_integer_type(t); });
    std::vector<TokenType> out;
    out.reserve(array.items.size());
    for (size_t i = 0; i < array.items.size(); ++i) {
      const int64_t type = array.items[i].as_int();
      // 0 is llama.cpp's "undefined"; it behaves as a normal token.
      if (type < 0 || type > static_cast<int64_t>(TokenType::kByte)) {
        throw bad_tokenizer(file_.name(), std::string(key) + "[" + std::to_string(i) + "]",
                            "is " + std::to_string(type) + "; token types are 0 to 6");
      }
      out.push_back(type == 0 ? TokenType::kNormal : static_cast<TokenType>(type));
    }
    return out;
  }

  // An optional token id: -1 when absent; range is checked with the vocabulary.
  int32_t token_id(std::string_view key) const {
    const Value* value = file_.find(key);
    if (value == nullptr) return -1;
    if (!value->is_integer()) throw wrong_type(key, "an integer", *value);
    const int64_t id = value->as_int();
    if (id < -1 || id > INT32_MAX) {
      throw bad_tokenizer(file_.name(), key, "is " + std::to_string(id) + ", not a token id");
    }
    return static_cast<int32_t>(id);
  }

  bool flag(std::string_view key, bool default_value) const {
    const Value* value = file_.find(key);
    if (value == nullptr) return default_value;
    if (value->type() != ValueType::kBool) throw wrong_type(key, "a bool", *value);
    return value->as_bool();
  }

 private:
  static bool is_integer_type(ValueType t) {
    switch (t) {
      case ValueType::kUint8: case ValueType::kInt8: case ValueType::kUint16:
      case ValueType::kInt16: case ValueType::kUint32: case ValueType::kInt32:
      case ValueType::kUint64: case ValueType::kInt64:
        return true;
      default:
        return false;
    }
  }

  template <class ElementOk>
  const gguf::Array& array_of(const Value& value, std::string_view key, std::string_view expected,
                              ElementOk element_ok) const {
    if (value.type() != ValueType::kArray || !element_ok(value.as_array().element_type)) {
      throw wrong_type(key, expected, value);
    }
    return value.as_array();
  }

  ModelError wrong_type(std::string_view key, std::string_view expected, const Value& value) const {
    std::string found(gguf::value_type_name(value.type()));
    if (value.type() == ValueType::kArray) {
      found = "array of " + std::string(gguf::value_type_name(value.as_array().element_type));
    }
    return bad_tokenizer(file_.name(), key,
                         "must be " + std::string(expected) + ", but is " + found);
  }

  const gguf::GgufFile& file_;
};

void check_length(std::string_view source, std::string_view key, size_t length, size_t n_tokens) {
  if (length != 0 && length != n_tokens) {
    throw bad_tokenizer(source, key,
                        "has " + std::to_string(length) + " entries, but " +
                            std::string(kTokensKey) + " has " + std::to_string(n_tokens));
  }
}

void check_token_id(std::string_view source, std::string_view key, int32_t id, size_t n_tokens) {
  if (id < -1 || id >= static_cast<int64_t>(n_tokens)) {
    throw bad_tokenizer(source, key,
                        "is " + std::to_string(id) + ", outside the vocabulary of " +
                            std::to_string(n_tokens) + " tokens");
  }
}

}  // namespace

Vocabulary checked_vocabulary(Vocabulary vocabulary, std::string_view source) {
  const size_t n = vocabulary.tokens.size();
  if (n == 0) throw bad_tokenizer(source, kTokensKey, "is empty");
  if (n > static_cast<size_t>(INT32_MAX)) throw bad_tokenizer(source, kTokensKey, "is too long");
  check_length(source, kScoresKey, vocabulary.scores.size(), n);
  check_length(source, kTypesKey, vocabulary.types.size(), n);
  for (size_t i = 0; i < vocabulary.types.size(); ++i) {
    const auto type = static_cast<int32_t>(vocabulary.types[i]);
    if (type < static_cast<int32_t>(TokenType::kNormal) || type > static_cast<int32_t>(TokenType::kByte)) {
      throw bad_tokenizer(source, std::string(kTypesKey) + "[" + std::to_string(i) + "]",
                          "is " + std::to_string(type) + "; token types are 1 to 6");
    }
  }
  check_token_id(source, kBosKey, vocabulary.bos_id, n);
  check_token_id(source, kEosKey, vocabulary.eos_id, n);
  check_token_id(source, kUnknownKey, vocabulary.unknown_id, n);
  if (vocabulary.scores.empty()) vocabulary.scores.assign(n, 0.0f);
  if (vocabulary.types.empty()) vocabulary.types.assign(n, TokenType::kNormal);
  return vocabulary;
}

Vocabulary vocabulary_from_gguf(const gguf::GgufFile& file) {
  const MetadataReader reader(file);
  Vocabulary vocabulary;
  vocabulary.model = reader.string(
      reader.required(kModelKey, "the file names no tokenizer (expected \"llama\" or \"gpt2\")"),
      kModelKey);
  vocabulary.tokens =
      reader.strings(reader.required(kTokensKey, "the file has no vocabulary"), kTokensKey);
  if (const Value* scores = file.find(kScoresKey)) vocabulary.scores = reader.floats(*scores, kScoresKey);
  if (const Value* types = file.find(kTypesKey)) vocabulary.types = reader.token_types(*types, kTypesKey);
  if (vocabulary.model == "gpt2") {
    vocabulary.merges = reader.strings(
        reader.required(kMergesKey, "a gpt2 (byte-level BPE) tokenizer needs its merges"), kMergesKey);
    if (const Value* pre = file.find(kPreKey)) vocabulary.pre = reader.string(*pre, kPreKey);
  }
  vocabulary.bos_id = reader.token_id(kBosKey);
  vocabulary.eos_id = reader.token_id(kEosKey);
  vocabulary.unknown_id = reader.token_id(kUnknownKey);
  const bool is_llama = vocabulary.model == "llama";
  vocabulary.add_bos = reader.flag(kAddBosKey, is_llama);
  vocabulary.add_space_prefix = reader.flag(kAddSpacePrefixKey, is_llama);
  return checked_vocabulary(std::move(vocabulary), file.name());
}

}  // namespace servescope
