// The code point classes GPT-2's pre-tokenisation pattern distinguishes.
#pragma once

namespace servescope {

enum class CodePointClass : unsigned char {
  kOther,       // none of the below: punctuation, symbols, marks, controls, unassigned
  kLetter,      // \p{L}: Lu Ll Lt Lm Lo
  kNumber,      // \p{N}: Nd Nl No
  kWhitespace,  // \s as Python's str.isspace()
};

// From the generated range table (tools/unicode/gen_unicode_tables.py).
CodePointClass classify_code_point(char32_t code_point);

}  // namespace servescope
