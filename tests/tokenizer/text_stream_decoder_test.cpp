#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/tokenizer/test_vocabularies.h"

namespace servescope {
namespace {

// In the llama test vocabulary the byte token of byte b is id 3 + b.
constexpr int32_t byte_token(uint8_t b) { return 3 + b; }

TEST(TextStreamDecoder, HoldsACharacterSplitOverByteTokens) {
  const auto tokenizer = test::load_golden_tokenizer("llama-spm.gguf");
  TextStreamDecoder stream(*tokenizer);
  EXPECT_EQ(stream.push(byte_token(0xF0)), "");  // 😀 = F0 9F 98 80
  EXPECT_EQ(stream.push(byte_token(0x9F)), "");
  EXPECT_EQ(stream.push(byte_token(0x98)), "");
  EXPECT_EQ(stream.push(byte_token(0x80)), "\xF0\x9F\x98\x80");
  EXPECT_EQ(stream.finish(), "");
}

TEST(TextStreamDecoder, ConcatenationEqualsTheTextForEveryGoldenCase) {
  for (const char* name : {"llama-spm.gguf", "gpt2-bpe.gguf"}) {
    const auto tokenizer = test::load_golden_tokenizer(name);
    for (const test::ExpectedCase& c :
         test::load_expected(name[0] == 'l' ? "llama-spm-expected.json" : "gpt2-bpe-expected.json")) {
      TextStreamDecoder stream(*tokenizer);
      std::string streamed;
      for (const int32_t id : c.ids) {
        const std::string part = stream.push(id);
        streamed += part;
      }
      streamed += stream.finish();
      // The stream keeps the space llama's add_space_prefix put in front; decode() drops it.
      std::string raw;
      for (const int32_t id : c.ids) raw += tokenizer->token_bytes(id);
      EXPECT_EQ(streamed, raw) << name << ": \"" << c.text << "\"";
    }
  }
}

TEST(TextStreamDecoder, EveryPushIsValidUtf8) {
  const auto tokenizer = test::load_golden_tokenizer("llama-spm.gguf");
  TextStreamDecoder stream(*tokenizer);
  for (const int32_t id : tokenizer->encode("\xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x9A\x80 caf\xC3\xA9")) {
    const std::string part = stream.push(id);
    EXPECT_NO_THROW(tokenizer->encode(part)) << "id " << id;  // encode() validates UTF-8
  }
}

TEST(TextStreamDecoder, IllFormedBytesBecomeReplacementCharacters) {
  const auto tokenizer = test::load_golden_tokenizer("llama-spm.gguf");
  TextStreamDecoder stream(*tokenizer);
  EXPECT_EQ(stream.push(byte_token(0x80)), "\xEF\xBF\xBD");           // stray continuation
  EXPECT_EQ(stream.push(byte_token(0xE6)), "");                       // start of a character ...
  EXPECT_EQ(stream.push(byte_token('A')), "\xEF\xBF\xBD" "A");        // ... broken off
  EXPECT_EQ(stream.push(byte_token(0xE6)), "");
  EXPECT_EQ(stream.push(byte_token(0x97)), "");
  EXPECT_EQ(stream.finish(), "\xEF\xBF\xBD");                         // never completed
  EXPECT_EQ(stream.finish(), "");
}

TEST(TextStreamDecoder, RejectsIdsOutsideTheVocabulary) {
  const auto tokenizer = test::load_golden_tokenizer("gpt2-bpe.gguf");
  TextStreamDecoder stream(*tokenizer);
  EXPECT_THROW(stream.push(512), InputError);
}

}  // namespace
}  // namespace servescope
