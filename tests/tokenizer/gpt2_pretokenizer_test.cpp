#include "engine/tokenizer/gpt2_pretokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace servescope {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Expected splits are what Python's `regex.findall` gives for GPT-2's pattern.
TEST(Gpt2Pretokenizer, WordsCarryTheirLeadingSpace) {
  EXPECT_THAT(split_gpt2_words("Hello world"), ElementsAre("Hello", " world"));
  EXPECT_THAT(split_gpt2_words("abc 123 ...!"), ElementsAre("abc", " 123", " ...!"));
  EXPECT_THAT(split_gpt2_words(""), IsEmpty());
}

TEST(Gpt2Pretokenizer, Contractions) {
  EXPECT_THAT(split_gpt2_words("it's they're I'll"), ElementsAre("it", "'s", " they", "'re", " I", "'ll"));
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
  EXPECT_THAT(split_gpt2_words("\xC2\xBD" "x"), ElementsAre("\xC2\xBD", "x"));  // ½ is a number
  EXPECT_THAT(split_gpt2_words("a\xC2\xA0" "b"), ElementsAre("a", "\xC2\xA0", "b"));  // NBSP is \s
}

}  // namespace
}  // namespace servescope
