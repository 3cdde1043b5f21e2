#include "engine/tokenizer/unicode_class.h"

#include <gtest/gtest.h>

namespace servescope {
namespace {

// Spot checks against Python's unicodedata (the table's source).
TEST(UnicodeClass, AsciiClasses) {
  EXPECT_EQ(classify_code_point(U'a'), CodePointClass::kLetter);
  EXPECT_EQ(classify_code_point(U'Z'), CodePointClass::kLetter);
  EXPECT_EQ(classify_code_point(U'7'), CodePointClass::kNumber);
  EXPECT_EQ(classify_code_point(U' '), CodePointClass::kWhitespace);
  EXPECT_EQ(classify_code_point(U'\t'), CodePointClass::kWhitespace);
  EXPECT_EQ(classify_code_point(U'\n'), CodePointClass::kWhitespace);
  EXPECT_EQ(classify_code_point(U'\''), CodePointClass::kOther);
  EXPECT_EQ(classify_code_point(U'_'), CodePointClass::kOther);
  EXPECT_EQ(classify_code_point(0), CodePointClass::kOther);
}

TEST(UnicodeClass, BeyondAscii) {
  EXPECT_EQ(classify_code_point(U'\u00E9'), CodePointClass::kLetter);      // é
  EXPECT_EQ(classify_code_point(U'\u65E5'), CodePointClass::kLetter);      // 日 (Lo)
  EXPECT_EQ(classify_code_point(U'\u02B0'), CodePointClass::kLetter);      // ʰ (Lm)
  EXPECT_EQ(classify_code_point(U'\u00BD'), CodePointClass::kNumber);      // ½ (No)
  EXPECT_EQ(classify_code_point(U'\u216B'), CodePointClass::kNumber);      // Ⅻ (Nl)
  EXPECT_EQ(classify_code_point(U'\u0663'), CodePointClass::kNumber);      // Arabic-Indic 3
  EXPECT_EQ(classify_code_point(U'\u00A0'), CodePointClass::kWhitespace);  // no-break space
  EXPECT_EQ(classify_code_point(U'\u3000'), CodePointClass::kWhitespace);
  EXPECT_EQ(classify_code_point(U'\u2028'), CodePointClass::kWhitespace);
  EXPECT_EQ(classify_code_point(U'\u0301'), CodePointClass::kOther);       // combining mark
  EXPECT_EQ(classify_code_point(U'\U0001F600'), CodePointClass::kOther);   // 😀
  EXPECT_EQ(classify_code_point(U'\U00010400'), CodePointClass::kLetter);  // 𐐀
  EXPECT_EQ(classify_code_point(0x10FFFF), CodePointClass::kOther);
}

}  // namespace
}  // namespace servescope
