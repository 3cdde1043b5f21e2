#include "engine/tokenizer/utf8.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/core/error.h"

namespace servescope {
namespace {

using ::testing::HasSubstr;
using Kind = utf8::Step::Kind;

std::string offset_error(std::string_view text) {
  try {
    utf8::validate(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Utf8, ReadsCharactersOfEveryLength) {
  const std::string text = "a\xC3\xA9\xE6\x97\xA5\xF0\x9F\x98\x80";  // a é 日 😀
  EXPECT_EQ(utf8::next(text, 0).code_point, U'a');
  EXPECT_EQ(utf8::next(text, 1).code_point, U'\u00E9');
  EXPECT_EQ(utf8::next(text, 3).code_point, U'\u65E5');
  const utf8::Step emoji = utf8::next(text, 6);
  EXPECT_EQ(emoji.kind, Kind::kCharacter);
  EXPECT_EQ(emoji.length, 4u);
  EXPECT_EQ(emoji.code_point, U'\U0001F600');
  EXPECT_NO_THROW(utf8::validate(text));
}

TEST(Utf8, TellsIncompleteFromInvalid) {
  EXPECT_EQ(utf8::next("\xF0\x9F\x98", 0).kind, Kind::kIncomplete);
  EXPECT_EQ(utf8::next("\x80", 0).kind, Kind::kInvalid);          // lone continuation
  EXPECT_EQ(utf8::next("\xC0\xAF", 0).kind, Kind::kInvalid);      // overlong '/'
  EXPECT_EQ(utf8::next("\xED\xA0\x80", 0).kind, Kind::kInvalid);  // surrogate U+D800
  EXPECT_EQ(utf8::next("\xF4\x90\x80\x80", 0).kind, Kind::kInvalid);  // above U+10FFFF
  EXPECT_EQ(utf8::next("\xE6\x41", 0).kind, Kind::kInvalid);      // continuation missing
  EXPECT_EQ(utf8::next("\xE6\x41", 0).length, 1u);
}

TEST(Utf8, ValidateNamesTheByteOffset) {
  EXPECT_THAT(offset_error("abc\xFF" "def"), HasSubstr("byte offset 3"));
  EXPECT_THAT(offset_error("h\xC3\xA9llo\xE6\x97"), HasSubstr("byte offset 6"));
  EXPECT_THAT(offset_error("\xED\xA0\x80"), HasSubstr("byte offset 0"));
  EXPECT_EQ(offset_error(""), "no error");
}

TEST(Utf8, AppendEncodesEveryLength) {
  std::string out;
  for (const char32_t cp : {U'a', U'\u00E9', U'\u65E5', U'\U0001F600'}) utf8::append(out, cp);
  EXPECT_EQ(out, "a\xC3\xA9\xE6\x97\xA5\xF0\x9F\x98\x80");
}

}  // namespace
}  // namespace servescope
