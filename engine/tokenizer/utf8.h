// UTF-8 helpers shared by the tokenizers and the streaming decoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace servescope::utf8 {

// What lies at one position of a byte string.
struct Step {
  enum class Kind {
    kCharacter,   // a complete, well-formed character of `length` bytes
    kIncomplete,  // a valid start of a character that the string ends before completing
    kInvalid,     // a byte that cannot start (or continue) a character here; skip `length`
  };
  Kind kind;
  size_t length;
  char32_t code_point;  // valid for kCharacter only
};

// Reads the character at `pos` (< text.size()) under RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF. kInvalid's length is the maximal ill-formed subpart
// (as the Unicode standard recommends replacing with one U+FFFD each).
Step next(std::string_view text, size_t pos);

// Throws InputError naming the byte offset of the first ill-formed or truncated character.
void validate(std::string_view text);

// Appends the UTF-8 encoding of a valid code point.
void append(std::string& out, char32_t code_point);

inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

}  // namespace servescope::utf8
