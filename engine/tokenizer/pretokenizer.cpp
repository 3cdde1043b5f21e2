#include "engine/tokenizer/pretokenizer.h"

#include <map>

#include "engine/core/error.h"

namespace servescope {
namespace {

// The expressions are data retyped from llama.cpp's src/llama-vocab.cpp (llm_tokenizer_bpe),
// where each comes from the model's tokenizer.json. Where llama.cpp rewrote "(?i:'s|...)" for
// std::regex, its rewritten form is kept (PCRE2 would take either; this keeps the splits
// identical to llama.cpp's).
struct Scheme {
  const char* name;
  std::vector<std::string> patterns;
};

// GPT-2's expression. llama.cpp drops its final "|\s+": whitespace it leaves unmatched
// becomes a piece of its own anyway (see PreTokenizer::split).
constexpr char kGpt2[] =
    R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))re";
constexpr char kContractions[] = R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))re";
constexpr char kLlama3Rest[] =
    R"re(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr char kQwen2Rest[] =
    R"re(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr char kCjk[] = R"re([一-龥ࠀ-一가-퟿]+)re";
// Upper-then-lower letter runs; llama.cpp uses this form for tiny_aya and a look-ahead
// rewrite of it for gpt-4o and tekken (std::regex has no \p{Lu}); PCRE2 takes it as is.
constexpr char kCasedWord[] =
    R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)re";
constexpr char kCapitalWord[] =
    R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)re";

const std::vector<Scheme>& schemes() {
  static const std::vector<Scheme> all = {
      {"gpt-2", {kGpt2}},
      {"default",
       {R"re([\p{P}\$\+<=>\^~\|]+)re", kGpt2, R"re(\p{N}+)re", R"re([0-9][0-9][0-9])re"}},
      {"llama-bpe", {std::string(kContractions) + kLlama3Rest}},
      {"qwen2", {std::string(kContractions) + kQwen2Rest}},
      {"qwen35",
       {std::string(kContractions) +
        R"re(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"}},
      {"smollm", {R"re(\p{N})re", kGpt2}},
      {"falcon", {R"re([\p{P}\$\+<=>\^~\|`]+)re", kGpt2, R"re([0-9][0-9][0-9])re"}},
      {"deepseek-llm",
       {R"re([\r\n])re",
        R"re(\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+)re",
        R"re(\s?[!-/:-~！-／：-～‘-‟　-。]+)re", R"re(\s+$)re", kCjk, R"re(\p{N}+)re"}},
      {"deepseek-coder",
       {R"re([\r\n])re", R"re(\s?\p{L}+)re", R"re(\s?\p{P}+)re", kCjk, R"re(\p{N})re"}},
      {"deepseek-v3",
       {R"re(\p{N}{1,3})re", R"re([一-龥぀-ゟ゠-ヿ]+)re",
        R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"}},
      {"gpt-4o",
       {std::string(kCasedWord) + "(?:" + kContractions + ")?|" + kCapitalWord +
        "(?:" + kContractions + ")?" +
        R"re(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"}},
      {"tekken",
       {std::string(kCasedWord) + "|" + kCapitalWord +
        R"re(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"}},
  };
  return all;
}

// tokenizer.ggml.pre values (llama.cpp's names) and the scheme each uses.
struct Alias {
  const char* pre;
  const char* scheme;
  bool ignore_merges = false;
};

const std::vector<Alias>& aliases() {
  static const std::vector<Alias> all = {
      {"gpt-2", "gpt-2"},
      {"phi-2", "gpt-2"},
      {"mpt", "gpt-2"},
      {"olmo", "gpt-2"},
      {"jais", "gpt-2"},
      {"default", "default"},
      {"llama-bpe", "llama-bpe", true},
      {"llama3", "llama-bpe", true},
      {"llama-v3", "llama-bpe", true},
      {"falcon3", "llama-bpe", true},
      {"pixtral", "llama-bpe", true},
      {"dbrx", "llama-bpe"},
      {"smaug-bpe", "llama-bpe"},
      {"qwen2", "qwen2"},
      {"deepseek-r1-qwen", "qwen2"},
      {"stablelm2", "qwen2"},
      {"qwen35", "qwen35"},
      {"smollm", "smollm"},
      {"starcoder", "smollm"},
      {"refact", "smollm"},
      {"command-r", "smollm"},
      {"codeshell", "smollm"},
      {"falcon", "falcon"},
      {"deepseek-llm", "deepseek-llm"},
      {"deepseek-coder", "deepseek-coder"},
      {"deepseek-v3", "deepseek-v3"},
      {"gpt-4o", "gpt-4o"},
      {"llama4", "gpt-4o"},
      {"tekken", "tekken", true},
  };
  return all;
}

const std::map<std::string, PreTokenizer, std::less<>>& registry() {
  static const std::map<std::string, PreTokenizer, std::less<>> all = [] {
    std::map<std::string, PreTokenizer, std::less<>> built;
    for (const Alias& alias : aliases()) {
      for (const Scheme& scheme : schemes()) {
        if (scheme.name == std::string_view(alias.scheme)) {
          built.emplace(alias.pre, PreTokenizer(scheme.name, scheme.patterns, alias.ignore_merges));
        }
      }
    }
    return built;
  }();
  return all;
}

}  // namespace

PreTokenizer::PreTokenizer(std::string name, const std::vector<std::string>& patterns,
                           bool ignore_merges)
    : name_(std::move(name)), ignore_merges_(ignore_merges) {
  for (const std::string& pattern : patterns) stages_.push_back(Regex::compile(pattern));
}

const PreTokenizer& PreTokenizer::named(std::string_view pre) {
  const auto found = registry().find(pre.empty() ? std::string_view("gpt-2") : pre);
  if (found == registry().end()) {
    std::string supported;
    for (const std::string& name : supported_names())
      supported += (supported.empty() ? "" : ", ") + name;
    throw ModelError(ModelError::Kind::kBadTokenizer,
                     "tokenizer.ggml.pre is \"" + std::string(pre) +
                         "\", a pre-tokeniser ServeScope does not know; supported: " + supported);
  }
  return found->second;
}

std::vector<std::string> PreTokenizer::supported_names() {
  std::vector<std::string> names;
  for (const Alias& alias : aliases()) names.emplace_back(alias.pre);
  return names;
}

std::vector<std::string> PreTokenizer::scheme_names() {
  std::vector<std::string> names;
  for (const Scheme& scheme : schemes()) names.emplace_back(scheme.name);
  return names;
}

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  if (!text.empty()) pieces.push_back(text);
  for (const auto& stage : stages_) {
    std::vector<std::string_view> finer;
    for (const std::string_view piece : pieces) {
      size_t done = 0;  // the text between matches is a piece too
      for (const Regex::Span span : stage->find_all(piece)) {
        if (span.begin > done) finer.push_back(piece.substr(done, span.begin - done));
        finer.push_back(piece.substr(span.begin, span.end - span.begin));
        done = span.end;
      }
      if (done < piece.size()) finer.push_back(piece.substr(done));
    }
    pieces = std::move(finer);
  }
  return pieces;
}

}  // namespace servescope
