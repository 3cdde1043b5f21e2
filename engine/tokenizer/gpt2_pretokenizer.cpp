#include "engine/tokenizer/gpt2_pretokenizer.h"

#include "engine/tokenizer/unicode_class.h"
#include "engine/tokenizer/utf8.h"

namespace servescope {
namespace {

// The text as code points with their classes and byte positions.
struct Character {
  size_t begin;  // byte offset
  char32_t code_point;
  CodePointClass cls;
};

std::vector<Character> characters_of(std::string_view text) {
  std::vector<Character> chars;
  for (size_t pos = 0; pos < text.size();) {
    const utf8::Step step = utf8::next(text, pos);
    chars.push_back({pos, step.code_point, classify_code_point(step.code_point)});
    pos += step.length;
  }
  return chars;
}

class WordSplitter {
 public:
  explicit WordSplitter(const std::vector<Character>& chars) : chars_(chars) {}

  // The number of characters of the match that starts at character i.
  size_t match_length(size_t i) const {
    if (size_t n = contraction(i)) return n;
    for (const CodePointClass cls : {CodePointClass::kLetter, CodePointClass::kNumber, CodePointClass::kOther}) {
      if (size_t n = optional_space_then_run(i, cls)) return n;
    }
    return whitespace(i);
  }

 private:
  bool is(size_t i, char32_t cp) const { return i < chars_.size() && chars_[i].code_point == cp; }
  bool has_class(size_t i, CodePointClass cls) const { return i < chars_.size() && chars_[i].cls == cls; }

  size_t run_length(size_t i, CodePointClass cls) const {
    size_t end = i;
    while (has_class(end, cls)) ++end;
    return end - i;
  }

  // 's|'t|'re|'ve|'m|'ll|'d (ASCII, case-sensitive)
  size_t contraction(size_t i) const {
    if (!is(i, U'\'')) return 0;
    if (is(i + 1, U's') || is(i + 1, U't') || is(i + 1, U'm') || is(i + 1, U'd')) return 2;
    if ((is(i + 1, U'r') && is(i + 2, U'e')) || (is(i + 1, U'v') && is(i + 2, U'e')) ||
        (is(i + 1, U'l') && is(i + 2, U'l'))) {
      return 3;
    }
    return 0;
  }

  // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: only U+0020 counts as the optional space.
  size_t optional_space_then_run(size_t i, CodePointClass cls) const {
    if (is(i, U' ') && has_class(i + 1, cls)) return 1 + run_length(i + 1, cls);
    return run_length(i, cls);
  }

  // `\s+(?!\S)|\s+`: a whitespace run, less its last character when a non-space follows and
  // the run is longer than one (so that the last space can lead the next word).
  size_t whitespace(size_t i) const {
    const size_t run = run_length(i, CodePointClass::kWhitespace);
    const bool followed_by_text = i + run < chars_.size();
    return followed_by_text && run > 1 ? run - 1 : run;
  }

  const std::vector<Character>& chars_;
};

}  // namespace

std::vector<std::string_view> split_gpt2_words(std::string_view text) {
  const std::vector<Character> chars = characters_of(text);
  const WordSplitter splitter(chars);
  std::vector<std::string_view> words;
  for (size_t i = 0; i < chars.size();) {
    const size_t n = splitter.match_length(i);
    const size_t begin = chars[i].begin;
    const size_t end = i + n < chars.size() ? chars[i + n].begin : text.size();
    words.push_back(text.substr(begin, end - begin));
    i += n;
  }
  return words;
}

}  // namespace servescope
