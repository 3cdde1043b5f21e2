#include "engine/tokenizer/pretokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/tokenizer/regex.h"
#include "tests/tokenizer/test_vocabularies.h"

namespace servescope {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<std::string_view> split_gpt2_words(std::string_view text) {
  return PreTokenizer::named("gpt-2").split(text);
}

// Expected splits are what Python's `regex.findall` gives for GPT-2's pattern.
TEST(Gpt2Pretokenizer, WordsCarryTheirLeadingSpace) {
  EXPECT_THAT(split_gpt2_words("Hello world"), ElementsAre("Hello", " world"));
  EXPECT_THAT(split_gpt2_words("abc 123 ...!"), ElementsAre("abc", " 123", " ...!"));
  EXPECT_THAT(split_gpt2_words(""), IsEmpty());
}

TEST(Gpt2Pretokenizer, Contractions) {
  EXPECT_THAT(split_gpt2_words("it's they're I'll"),
              ElementsAre("it", "'s", " they", "'re", " I", "'ll"));
  EXPECT_THAT(split_gpt2_words("'S"), ElementsAre("'", "S"));  // case-sensitive
  EXPECT_THAT(split_gpt2_words("'sa"), ElementsAre("'s", "a"));
}

TEST(Gpt2Pretokenizer, WhitespaceRunsLeaveTheLastSpaceToTheNextWord) {
  EXPECT_THAT(split_gpt2_words("a   b"), ElementsAre("a", "  ", " b"));
  EXPECT_THAT(split_gpt2_words("a\n\nb"), ElementsAre("a", "\n", "\n", "b"));
  EXPECT_THAT(split_gpt2_words("trailing  "), ElementsAre("trailing", "  "));
  EXPECT_THAT(split_gpt2_words("x \t y"), ElementsAre("x", " \t", " y"));
  EXPECT_THAT(split_gpt2_words("\tx"), ElementsAre("\t", "x"));
}

TEST(Gpt2Pretokenizer, UnicodeClasses) {
  EXPECT_THAT(split_gpt2_words("caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC"),  // café 日本
              ElementsAre("caf\xC3\xA9", " \xE6\x97\xA5\xE6\x9C\xAC"));
  EXPECT_THAT(split_gpt2_words("\xC2\xBD"
                               "x"),
              ElementsAre("\xC2\xBD", "x"));  // ½ is a number
  EXPECT_THAT(split_gpt2_words("a\xC2\xA0"
                               "b"),
              ElementsAre("a", "\xC2\xA0", "b"));  // NBSP is \s
}

// The splits of tools/golden/make_pretokenizer_data.py: Python's `regex` module running the
// same schemes, typed in there separately, on a few hundred tricky strings.
class PreTokenizerReference : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::ifstream in(test::tokenizer_data("pretokenizer-splits.json"));
    reference_ = new nlohmann::json(nlohmann::json::parse(in));
  }
  static void TearDownTestSuite() {
    delete reference_;
    reference_ = nullptr;
  }
  static const nlohmann::json& reference() { return *reference_; }

 private:
  static nlohmann::json* reference_;
};

nlohmann::json* PreTokenizerReference::reference_ = nullptr;

std::vector<size_t> piece_lengths(const std::vector<std::string_view>& pieces) {
  std::vector<size_t> lengths;
  for (const std::string_view piece : pieces) lengths.push_back(piece.size());
  return lengths;
}

TEST_F(PreTokenizerReference, EverySchemeHasReferenceSplits) {
  for (const std::string& scheme : PreTokenizer::scheme_names()) {
    EXPECT_TRUE(reference().at("splits").contains(scheme)) << scheme;
  }
  EXPECT_EQ(reference().at("splits").size(), PreTokenizer::scheme_names().size());
}

TEST_F(PreTokenizerReference, SplitsMatchPythonRegexExactly) {
  const auto& texts = reference().at("texts");
  ASSERT_GE(texts.size(), 300u);
  for (const auto& [scheme, rows] : reference().at("splits").items()) {
    const PreTokenizer& pre = PreTokenizer::named(scheme);
    ASSERT_EQ(rows.size(), texts.size()) << scheme;
    for (size_t i = 0; i < texts.size(); ++i) {
      const std::string text = texts[i].get<std::string>();
      EXPECT_EQ(piece_lengths(pre.split(text)), rows[i].get<std::vector<size_t>>())
          << scheme << " splitting \"" << text << "\"";
    }
  }
}

TEST(PreTokenizer, LlamaCppNamesShareSchemes) {
  EXPECT_EQ(PreTokenizer::named("").name(), "gpt-2");  // tokenizer.ggml.pre absent
  EXPECT_EQ(PreTokenizer::named("starcoder").name(), "smollm");
  EXPECT_EQ(PreTokenizer::named("llama3").name(), "llama-bpe");
  EXPECT_EQ(PreTokenizer::named("deepseek-r1-qwen").name(), "qwen2");
  EXPECT_TRUE(PreTokenizer::named("llama-bpe").ignore_merges());
  EXPECT_FALSE(PreTokenizer::named("dbrx").ignore_merges());  // llama 3's expression, merges kept
  EXPECT_FALSE(PreTokenizer::named("qwen2").ignore_merges());
}

TEST(PreTokenizer, SchemesDifferWhereTheModelsDo) {
  // llama 3 groups digits by three, qwen2 and smollm split each digit.
  EXPECT_THAT(PreTokenizer::named("llama-bpe").split("12345"), ElementsAre("123", "45"));
  EXPECT_THAT(PreTokenizer::named("qwen2").split("12345"), ElementsAre("1", "2", "3", "4", "5"));
  EXPECT_THAT(PreTokenizer::named("smollm").split("a 12"), ElementsAre("a", " ", "1", "2"));
  // llama 3's contractions ignore case; GPT-2's do not.
  EXPECT_THAT(PreTokenizer::named("llama-bpe").split("IT'S"), ElementsAre("IT", "'S"));
  EXPECT_THAT(split_gpt2_words("IT'S"), ElementsAre("IT", "'", "S"));
}

TEST(PreTokenizer, UnknownNameListsTheSupportedOnes) {
  try {
    PreTokenizer::named("klingon");
    ADD_FAILURE() << "no ModelError";
  } catch (const ModelError& e) {
    EXPECT_EQ(e.kind(), ModelError::Kind::kBadTokenizer);
    EXPECT_THAT(e.what(), HasSubstr("tokenizer.ggml.pre is \"klingon\""));
    EXPECT_THAT(e.what(), HasSubstr("gpt-2, "));
    EXPECT_THAT(e.what(), HasSubstr("llama-bpe"));
    EXPECT_THAT(e.what(), HasSubstr("qwen2"));
    EXPECT_THAT(e.what(), HasSubstr("smollm"));
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);  // one line
  }
}

TEST(PreTokenizer, ByteLevelTokenizerUsesThePreItsVocabularyNames) {
  Vocabulary vocab =
      vocabulary_from_gguf(gguf::GgufFile::open(test::tokenizer_data("gpt2-bpe.gguf")));
  EXPECT_EQ(vocab.pre, "");                                   // the key is absent: GPT-2's scheme
  EXPECT_EQ(make_tokenizer(vocab)->encode(" 1").size(), 1u);  // the merge "Ġ 1"
  vocab.pre = "qwen2";  // a digit is a word of its own: the space cannot merge with it
  const auto qwen2 = make_tokenizer(vocab);
  EXPECT_EQ(qwen2->encode(" 1"), (std::vector<int32_t>{' ', '1'}));
  vocab.pre = "klingon";
  try {
    make_tokenizer(vocab);
    ADD_FAILURE() << "no ModelError";
  } catch (const ModelError& e) {
    EXPECT_EQ(e.kind(), ModelError::Kind::kBadTokenizer);
    EXPECT_THAT(e.what(), HasSubstr("tokenizer vocabulary: tokenizer.ggml.pre is \"klingon\""));
  }
}

TEST(Regex, CompiledPatternsAreShared) {
  const auto first = Regex::compile(R"(\p{L}+)");
  EXPECT_EQ(Regex::compile(R"(\p{L}+)").get(), first.get());
  EXPECT_NE(Regex::compile(R"(\p{N}+)").get(), first.get());
}

TEST(Regex, FindsNonEmptyMatchesAsByteSpans) {
  const auto letters = Regex::compile(R"(\p{L}+)");
  EXPECT_THAT(letters->find_all("ab 12 \xC3\xA9t\xC3\xA9"),  // "ab 12 été"
              ElementsAre(Regex::Span{0, 2}, Regex::Span{6, 11}));
  EXPECT_THAT(letters->find_all(""), IsEmpty());
  // A pattern that can match empty yields only its non-empty matches.
  EXPECT_THAT(Regex::compile("x*")->find_all("axxb\xE6\x97\xA5x"),
              ElementsAre(Regex::Span{1, 3}, Regex::Span{7, 8}));
}

TEST(Regex, BadPatternIsATypedError) {
  try {
    Regex::compile("(unclosed");
    ADD_FAILURE() << "no ModelError";
  } catch (const ModelError& e) {
    EXPECT_EQ(e.kind(), ModelError::Kind::kBadTokenizer);
    EXPECT_THAT(e.what(), HasSubstr("(unclosed"));
    EXPECT_THAT(e.what(), HasSubstr("at byte 9"));
  }
}

}  // namespace
}  // namespace servescope
