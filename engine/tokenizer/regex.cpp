#include "engine/tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <map>
#include <mutex>

#include "engine/core/error.h"

namespace servescope {
namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  const int length = pcre2_get_error_message(code, buffer, sizeof buffer);
  return length < 0
             ? "PCRE2 error " + std::to_string(code)
             : std::string(reinterpret_cast<const char*>(buffer), static_cast<size_t>(length));
}

template <class T, void (*Free)(T*)>
struct Freer {
  void operator()(T* p) const { Free(p); }
};
using MatchData = std::unique_ptr<pcre2_match_data, Freer<pcre2_match_data, pcre2_match_data_free>>;

// Length of the UTF-8 character that starts with `lead` (the subject is valid UTF-8).
size_t utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

}  // namespace

struct Regex::Code {
  explicit Code(pcre2_code* compiled) : code(compiled) {}
  ~Code() { pcre2_code_free(code); }
  Code(const Code&) = delete;
  Code& operator=(const Code&) = delete;
  pcre2_code* code;
};

Regex::Regex(std::string pattern) : pattern_(std::move(pattern)) {
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern_.data()), pattern_.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &error_offset, nullptr);
  if (code == nullptr) {
    throw ModelError(ModelError::Kind::kBadTokenizer,
                     "pre-tokeniser pattern \"" + pattern_ + "\" does not compile: " +
                         pcre2_message(error) + " at byte " + std::to_string(error_offset));
  }
  code_ = std::make_unique<Code>(code);
  // JIT is an optimisation: where PCRE2 was built without it, the interpreter matches alike.
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() = default;

std::shared_ptr<const Regex> Regex::compile(const std::string& pattern) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const Regex>, std::less<>> cache;
  const std::lock_guard lock(mutex);
  auto found = cache.find(pattern);
  if (found == cache.end()) {
    found = cache.emplace(pattern, std::shared_ptr<const Regex>(new Regex(pattern))).first;
  }
  return found->second;
}

std::vector<Regex::Span> Regex::find_all(std::string_view subject) const {
  const MatchData match_data(pcre2_match_data_create_from_pattern(code_->code, nullptr));
  if (!match_data) throw std::bad_alloc();
  const auto* text = reinterpret_cast<PCRE2_SPTR>(subject.data());
  std::vector<Span> spans;
  for (size_t start = 0; start < subject.size();) {
    const int rc = pcre2_match(code_->code, text, subject.size(), start, PCRE2_NO_UTF_CHECK,
                               match_data.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      throw InputError("the pre-tokeniser pattern \"" + pattern_ +
                       "\" gave up on the text at byte " + std::to_string(start) + ": " +
                       pcre2_message(rc));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match_data.get());
    const Span span{ovector[0], ovector[1]};
    if (span.end > span.begin) {
      spans.push_back(span);
      start = span.end;
    } else if (span.begin <
               subject.size()) {  // an empty match (a look-ahead): step over a character
      start = span.begin + utf8_length(static_cast<unsigned char>(subject[span.begin]));
    } else {
      break;
    }
  }
  return spans;
}

}  // namespace servescope
