// Control and user-defined tokens written in the text: plain text by default, matched as
// the token only with SpecialTokens::kParse.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/tokenizer/tokenizer.h"
#include "tests/tokenizer/test_vocabularies.h"

namespace servescope {
namespace {

using Ids = std::vector<int32_t>;

Ids concat(std::initializer_list<Ids> parts) {
  Ids all;
  for (const Ids& part : parts) all.insert(all.end(), part.begin(), part.end());
  return all;
}

constexpr int32_t kEndOfText = 511;  // <|endoftext|> of the gpt2 golden vocabulary (control)

TEST(SpecialTokens, Gpt2EndOfTextIsPlainTextUnlessParsed) {
  const auto tokenizer = test::load_golden_tokenizer("gpt2-bpe.gguf");
  const std::string text = "Hello<|endoftext|> world";
  const Ids plain = tokenizer->encode(text);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), kEndOfText), 0);
  EXPECT_EQ(plain, tokenizer->encode(text, SpecialTokens::kAsText));
  EXPECT_EQ(tokenizer->encode(text, SpecialTokens::kParse),
            concat({tokenizer->encode("Hello"), {kEndOfText}, tokenizer->encode(" world")}));
}

TEST(SpecialTokens, ParsedTokensMayBeAdjacentOrAtTheEnds) {
  const auto tokenizer = test::load_golden_tokenizer("gpt2-bpe.gguf");
  EXPECT_EQ(tokenizer->encode("<|endoftext|><|endoftext|>", SpecialTokens::kParse),
            (Ids{kEndOfText, kEndOfText}));
  EXPECT_EQ(tokenizer->encode("<|endoftext|>x", SpecialTokens::kParse),
            concat({{kEndOfText}, tokenizer->encode("x")}));
  // Incomplete: plain text.
  EXPECT_EQ(tokenizer->encode("<|endoftext|", SpecialTokens::kParse),
            tokenizer->encode("<|endoftext|"));
  EXPECT_TRUE(tokenizer->encode("", SpecialTokens::kParse).empty());
}

TEST(SpecialTokens, LlamaBosAndEosParsedWithTheSpacePrefixAfterEach) {
  const auto tokenizer = test::load_golden_tokenizer("llama-spm.gguf");
  const Ids parsed = tokenizer->encode_with_bos("<s>Hello world</s>", SpecialTokens::kParse);
  // llama.cpp puts the SentencePiece space prefix in front of every stretch of text.
  EXPECT_EQ(parsed, concat({{1, 1}, tokenizer->encode("Hello world"), {2}}));
  const Ids plain = tokenizer->encode("<s>Hello world</s>");
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 1) + std::count(plain.begin(), plain.end(), 2),
            0);
  EXPECT_EQ(tokenizer->decode(plain), "<s>Hello world</s>");
}

// A SentencePiece vocabulary with a user-defined token, a longer control token that starts
// with it, and a normal token that only looks special.
std::unique_ptr<Tokenizer> hand_made_tokenizer() {
  Vocabulary vocab;
  vocab.model = "llama";
  vocab.add_space_prefix = false;
  //              0        1    2    3    4    5    6       7        8      9
  vocab.tokens = {"<unk>", "a", "b", "<", ">", "x", "<x>", "<x>>", "<n>", "\xE6\x97"};
  vocab.types = {TokenType::kUnknown,     TokenType::kNormal,  TokenType::kNormal,
                 TokenType::kNormal,      TokenType::kNormal,  TokenType::kNormal,
                 TokenType::kUserDefined, TokenType::kControl, TokenType::kNormal,
                 TokenType::kControl};
  vocab.unknown_id = 0;
  return make_tokenizer(vocab);
}

TEST(SpecialTokens, UserDefinedAndControlTokensOnlyWhenParsedLongestFirst) {
  const auto tokenizer = hand_made_tokenizer();
  EXPECT_EQ(tokenizer->encode("a<x>b", SpecialTokens::kParse), (Ids{1, 6, 2}));
  EXPECT_EQ(tokenizer->encode("a<x>>b", SpecialTokens::kParse), (Ids{1, 7, 2}));
  EXPECT_EQ(tokenizer->encode("a<x>b"), (Ids{1, 3, 5, 4, 2}));
  EXPECT_EQ(tokenizer->encode("<x>>"), (Ids{3, 5, 4, 4}));
  // A normal token is never matched as a special one ("n" is not a piece: unknown).
  EXPECT_EQ(tokenizer->encode("<n>", SpecialTokens::kParse), (Ids{3, 0, 4}));
  // A control token that is part of a character (its first two bytes) never matches.
  EXPECT_EQ(tokenizer->encode("\xE6\x97\xA5", SpecialTokens::kParse), (Ids{0}));
}

}  // namespace
}  // namespace servescope
