// A compiled PCRE2 regular expression (8-bit, UTF mode, Unicode properties for \s \d \w and
// POSIX classes) that pre-tokenisers split text with. Compiled patterns are shared: compile()
// returns the same object for the same pattern, and matching is safe from several threads.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace servescope {

class Regex {
 public:
  // A match as byte offsets into the subject.
  struct Span {
    size_t begin;
    size_t end;
    bool operator==(const Span&) const = default;
  };

  // Throws ModelError(kBadTokenizer) naming the pattern and PCRE2's reason and offset.
  static std::shared_ptr<const Regex> compile(const std::string& pattern);

  // Successive non-overlapping, non-empty matches, left to right (as Python's
  // regex.finditer). `subject` must be valid UTF-8 (not checked again). Throws InputError if
  // PCRE2 gives up on the text (its match limit).
  std::vector<Span> find_all(std::string_view subject) const;

  const std::string& pattern() const { return pattern_; }
  bool jit_compiled() const { return jit_; }

  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

 private:
  struct Code;  // pcre2_code, kept out of this header
  explicit Regex(std::string pattern);

  std::string pattern_;
  std::unique_ptr<Code> code_;
  bool jit_ = false;
};

}  // namespace servescope
