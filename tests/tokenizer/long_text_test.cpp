// Long inputs (about 100 KB) encode correctly; the merge loop is O(n log n), so these run
// quickly even as one single "word".
#include <gtest/gtest.h>

#include <string>

#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/tokenizer/test_vocabularies.h"

namespace servescope {
namespace {

std::string long_text() {
  std::string text;
  const std::string sentences[] = {
      "The model serves tokens from the cache, and the batch decodes in memory. ",
      "Caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x98\x80 it's 2024!\n",
      "\tnumbers 12345 and   spaces  ",
  };
  for (size_t i = 0; text.size() < 100'000; ++i) text += sentences[i % 3];
  return text;
}

TEST(LongText, RoundTripsAndEncodesLikeItsParts) {
  const std::string text = long_text();
  for (const char* name : {"llama-spm.gguf", "gpt2-bpe.gguf"}) {
    const auto tokenizer = test::load_golden_tokenizer(name);
    const std::vector<int32_t> ids = tokenizer->encode(text);
    EXPECT_LT(ids.size(), text.size()) << name;
    EXPECT_EQ(tokenizer->decode(ids), text) << name;
  }
}

TEST(LongText, OneLongWord) {
  const std::string word(100'000, 'a');
  const std::string cjk = [] {
    std::string s;
    while (s.size() < 100'000) s += "\xE6\x97\xA5";
    return s;
  }();
  for (const char* name : {"llama-spm.gguf", "gpt2-bpe.gguf"}) {
    const auto tokenizer = test::load_golden_tokenizer(name);
    EXPECT_EQ(tokenizer->decode(tokenizer->encode(word)), word) << name;
    EXPECT_EQ(tokenizer->decode(tokenizer->encode(cjk)), cjk) << name;
  }
}

// Long runs that make the expressions backtrack (a whitespace run that a non-space ends,
// letters of both cases, digits) split without PCRE2 giving up, for every scheme.
TEST(LongText, EverySchemeSplitsLongRuns) {
  const std::string mixed = [] {
    std::string s;
    while (s.size() < 30'000) s += "aB\xC3\xA9\xCC\x81 \t";
    return s;
  }();
  const std::string runs[] = {std::string(30'000, ' ') + "x", std::string(20'000, '\n') + "x",
                              std::string(30'000, '7'), mixed};
  for (const std::string& scheme : PreTokenizer::scheme_names()) {
    for (const std::string& text : runs) {
      std::string joined;
      for (const std::string_view piece : PreTokenizer::named(scheme).split(text)) joined += piece;
      EXPECT_EQ(joined, text) << scheme;
    }
  }
}

}  // namespace
}  // namespace servescope
