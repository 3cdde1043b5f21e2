// Bad tokenizer metadata must raise ModelError naming the file and the key at fault.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/tokenizer/test_vocabularies.h"

namespace servescope {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using gguf::Value;
using gguf::ValueType;

// The golden file's metadata with one key replaced (or removed when `value` is nullopt),
// as an in-memory GGUF named "bad.gguf".
gguf::GgufFile golden_with(const std::string& gguf_name, const std::string& key, std::optional<Value> value) {
  const gguf::GgufFile golden = gguf::GgufFile::open(test::tokenizer_data(gguf_name));
  gguf::GgufWriter writer;
  for (const auto& [name, original] : golden.metadata()) {
    if (name == key) {
      if (value) writer.set(name, *value);
    } else {
      writer.set(name, original);
    }
  }
  if (value && golden.find(key) == nullptr) writer.set(key, *value);
  return gguf::GgufFile::from_bytes(writer.to_bytes(), "bad.gguf");
}

struct Failure {
  ModelError::Kind kind;
  std::string message;
};

std::optional<Failure> load_failure(const gguf::GgufFile& file) {
  try {
    load_tokenizer(file);
  } catch (const ModelError& e) {
    return Failure{e.kind(), e.what()};
  }
  return std::nullopt;
}

std::vector<Value> strings(std::initializer_list<const char*> items) {
  std::vector<Value> values;
  for (const char* s : items) values.push_back(Value::str(s));
  return values;
}

TEST(BadTokenizerMetadata, MissingTokens) {
  const auto failure = load_failure(golden_with("llama-spm.gguf", "tokenizer.ggml.tokens", std::nullopt));
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->kind, ModelError::Kind::kMissingMetadata);
  EXPECT_THAT(failure->message, AllOf(HasSubstr("bad.gguf"), HasSubstr("tokenizer.ggml.tokens")));
}

TEST(BadTokenizerMetadata, MissingModel) {
  const auto failure = load_failure(golden_with("llama-spm.gguf", "tokenizer.ggml.model", std::nullopt));
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->kind, ModelError::Kind::kMissingMetadata);
  EXPECT_THAT(failure->message, HasSubstr("tokenizer.ggml.model"));
}

TEST(BadTokenizerMetadata, MissingGpt2Merges) {
  const auto failure = load_failure(golden_with("gpt2-bpe.gguf", "tokenizer.ggml.merges", std::nullopt));
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->kind, ModelError::Kind::kMissingMetadata);
  EXPECT_THAT(failure->message, HasSubstr("tokenizer.ggml.merges"));
}

TEST(BadTokenizerMetadata, ScoresOfAnotherLength) {
  const auto failure = load_failure(golden_with("llama-spm.gguf", "tokenizer.ggml.scores",
                                                Value::array(ValueType::kFloat32, {Value::f32(0.0f)})));
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->kind, ModelError::Kind::kBadTokenizer);
  EXPECT_THAT(failure->message, AllOf(HasSubstr("bad.gguf"), HasSubstr("tokenizer.ggml.scores"),
                                      HasSubstr("has 1 entries"), HasSubstr("512")));
}

TEST(BadTokenizerMetadata, TokenTypesOfAnotherLength) {
  const auto failure = load_failure(golden_with("llama-spm.gguf", "tokenizer.ggml.token_type",
                                                Value::array(ValueType::kInt32, {Value::i32(1), Value::i32(1)})));
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->kind, ModelError::Kind::kBadTokenizer);
  EXPECT_THAT(failure->message, HasSubstr("tokenizer.ggml.token_type"));
}

TEST(BadTokenizerMetadata, BosOutOfRange) {
  const auto failure = load_failure(golden_with("llama-spm.gguf", "tokenizer.ggml.bos_token_id", Value::u32(512)));
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->kind, ModelError::Kind::kBadTokenizer);
  EXPECT_THAT(failure->message, AllOf(HasSubstr("bad.gguf"), HasSubstr("tokenizer.ggml.bos_token_id"), HasSubstr("512")));
}

TEST(BadTokenizerMetadata, UnknownModelListsTheSupportedOnes) {
  const auto failure = load_failure(golden_with("llama-spm.gguf", "tokenizer.ggml.model", Value::str("bert")));
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->kind, ModelError::Kind::kBadTokenizer);
  EXPECT_THAT(failure->message, AllOf(HasSubstr("bad.gguf"), HasSubstr("tokenizer.ggml.model"), HasSubstr("bert"),
                                      HasSubstr("llama, gpt2")));
}

TEST(BadTokenizerMetadata, WrongValueType) {
  const auto failure = load_failure(golden_with("llama-spm.gguf", "tokenizer.ggml.tokens", Value::str("abc")));
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->kind, ModelError::Kind::kBadTokenizer);
  EXPECT_THAT(failure->message, AllOf(HasSubstr("tokenizer.ggml.tokens"), HasSubstr("array of strings")));
}

TEST(BadTokenizerMetadata, TokenTypeOutOfRange) {
  std::vector<Value> types(512, Value::i32(1));
  types[7] = Value::i32(9);
  const auto failure = load_failure(
      golden_with("llama-spm.gguf", "tokenizer.ggml.token_type", Value::array(ValueType::kInt32, types)));
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->message, AllOf(HasSubstr("tokenizer.ggml.token_type[7]"), HasSubstr("9")));
}

TEST(BadTokenizerMetadata, MergeMakingAnUnknownToken) {
  const gguf::GgufFile golden = gguf::GgufFile::open(test::tokenizer_data("gpt2-bpe.gguf"));
  std::vector<Value> merges = golden.find("tokenizer.ggml.merges")->as_array().items;
  merges.push_back(Value::str("q z"));
  const auto failure = load_failure(
      golden_with("gpt2-bpe.gguf", "tokenizer.ggml.merges", Value::array(ValueType::kString, merges)));
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->kind, ModelError::Kind::kBadTokenizer);
  EXPECT_THAT(failure->message, AllOf(HasSubstr("tokenizer.ggml.merges[255]"), HasSubstr("\"qz\"")));
}

TEST(BadTokenizerMetadata, MalformedMerge) {
  const auto failure = load_failure(
      golden_with("gpt2-bpe.gguf", "tokenizer.ggml.merges", Value::array(ValueType::kString, strings({"ab"}))));
  ASSERT_TRUE(failure);
  EXPECT_THAT(failure->message, AllOf(HasSubstr("tokenizer.ggml.merges[0]"), HasSubstr("left right")));
}

TEST(BadTokenizerMetadata, Gpt2WithoutByteTokens) {
  Vocabulary vocab;
  vocab.model = "gpt2";
  vocab.tokens = {"a", "b"};
  try {
    make_tokenizer(vocab);
    ADD_FAILURE() << "no ModelError";
  } catch (const ModelError& e) {
    EXPECT_EQ(e.kind(), ModelError::Kind::kBadTokenizer);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("tokenizer.ggml.tokens"), HasSubstr("byte 0x00")));
  }
}

TEST(BadVocabulary, StructChecksNameTheKeys) {
  Vocabulary vocab;
  vocab.model = "llama";
  vocab.tokens = {"<unk>", "a"};
  vocab.scores = {0.0f};
  EXPECT_THROW(make_tokenizer(vocab), ModelError);
  vocab.scores.clear();
  vocab.eos_id = 2;
  try {
    make_tokenizer(vocab);
    ADD_FAILURE() << "no ModelError";
  } catch (const ModelError& e) {
    EXPECT_THAT(e.what(), HasSubstr("tokenizer.ggml.eos_token_id"));
  }
  vocab.eos_id = -1;
  vocab.model = "bert";
  try {
    make_tokenizer(vocab);
    ADD_FAILURE() << "no ModelError";
  } catch (const ModelError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("bert"), HasSubstr("llama, gpt2")));
  }
  vocab.model = "llama";
  vocab.tokens.clear();
  EXPECT_THROW(make_tokenizer(vocab), ModelError);
}

TEST(HandMadeVocabulary, LlamaMergesByScoreAndSkipsControlPieces) {
  Vocabulary vocab;
  vocab.model = "llama";
  vocab.add_space_prefix = false;
  //            0        1     2    3    4     5      6      7
  vocab.tokens = {"<unk>", "a", "b", "c", "ab", "bc", "abc", "<b>"};
  vocab.scores = {0, 0, 0, 0, -2, -1, -3, 5};
  vocab.types = {TokenType::kUnknown, TokenType::kNormal, TokenType::kNormal, TokenType::kNormal,
                 TokenType::kNormal,  TokenType::kNormal, TokenType::kNormal, TokenType::kControl};
  vocab.unknown_id = 0;
  const auto tokenizer = make_tokenizer(vocab);
  // "bc" (-1) beats "ab" (-2); then "a"+"bc" = "abc".
  EXPECT_EQ(tokenizer->encode("abc"), (std::vector<int32_t>{6}));
  EXPECT_EQ(tokenizer->encode("abab"), (std::vector<int32_t>{4, 4}));
  // '<' and '>' are not pieces and there are no byte pieces: unknown token each; "<b>" is
  // a control piece, so merges never make it.
  EXPECT_EQ(tokenizer->encode("<b>"), (std::vector<int32_t>{0, 2, 0}));
  EXPECT_EQ(tokenizer->decode(std::vector<int32_t>{0}), " \xE2\x81\x87 ");  // SentencePiece's " ⁇ "
}

TEST(HandMadeVocabulary, EqualScoresMergeLeftmostFirst) {
  Vocabulary vocab;
  vocab.model = "llama";
  vocab.add_space_prefix = false;
  vocab.tokens = {"<unk>", "a", "aa"};
  vocab.scores = {0, 0, -1};
  vocab.unknown_id = 0;
  const auto tokenizer = make_tokenizer(vocab);
  EXPECT_EQ(tokenizer->encode("aaa"), (std::vector<int32_t>{2, 1}));
}

}  // namespace
}  // namespace servescope
