#include "engine/tokenizer/sentencepiece_bpe_tokenizer.h"

#include <cstdio>
#include <optional>
#include <utility>

#include "engine/core/error.h"
#include "engine/tokenizer/greedy_merge.h"
#include "engine/tokenizer/utf8.h"

namespace servescope {
namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK
// What SentencePiece prints for the unknown token.
constexpr std::string_view kUnknownSurface = " \xE2\x81\x87 ";  // " ⁇ "

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0;;) {
    const size_t found = text.find(from, pos);
    out.append(text.substr(pos, found - pos));
    if (found == std::string_view::npos) return out;
    out.append(to);
    pos = found + from.size();
  }
}

// "<0x41>" -> 0x41; nullopt if the piece is not of that form.
std::optional<uint8_t> parse_byte_piece(std::string_view piece) {
  unsigned value = 0;
  char end = 0;
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return std::nullopt;
  const std::string digits(piece.substr(3, 2));
  if (std::sscanf(digits.c_str(), "%2x%c", &value, &end) != 1) return std::nullopt;
  return static_cast<uint8_t>(value);
}

}  // namespace

SentencePieceBpeTokenizer::SentencePieceBpeTokenizer(Vocabulary vocab, std::string_view source)
    : Tokenizer(std::move(vocab), source) {
  byte_tokens_.fill(-1);
  token_bytes_.resize(size());
  for (int32_t id = 0; id < size(); ++id) {
    const std::string& text = vocabulary().tokens[id];
    switch (type_of(id)) {
      case TokenType::kNormal:
      case TokenType::kUserDefined:
        mergeable_pieces_.emplace(text, id);  // the first of duplicate pieces wins
        token_bytes_[id] = replace_all(text, kSpaceMarker, " ");
        break;
      case TokenType::kByte: {
        const std::optional<uint8_t> byte = parse_byte_piece(text);
        if (!byte) {
          throw ModelError(ModelError::Kind::kBadTokenizer,
                           std::string(source) + ": tokenizer.ggml.tokens[" + std::to_string(id) +
                               "] \"" + text + "\" has type byte but is not of the form <0xNN>");
        }
        if (byte_tokens_[*byte] < 0) byte_tokens_[*byte] = id;
        token_bytes_[id] = std::string(1, static_cast<char>(*byte));
        break;
      }
      case TokenType::kUnknown:
        token_bytes_[id] = kUnknownSurface;
        break;
      case TokenType::kControl:
      case TokenType::kUnused:
        break;  // stand for no text
    }
  }
}

void SentencePieceBpeTokenizer::encode_text(std::string_view text,
                                            std::vector<int32_t>& ids) const {
  if (text.empty()) return;
  std::string normalized =
      vocabulary().add_space_prefix ? std::string(kSpaceMarker) : std::string();
  normalized += replace_all(text, " ", kSpaceMarker);

  const auto merged_piece_score = [this](std::string_view left,
                                         std::string_view right) -> std::optional<double> {
    const auto found =
        mergeable_pieces_.find(std::string_view(left.data(), left.size() + right.size()));
    if (found == mergeable_pieces_.end()) return std::nullopt;
    return vocabulary().scores[found->second];
  };
  for (const std::string_view symbol : merge_greedily(normalized, merged_piece_score)) {
    const auto found = mergeable_pieces_.find(symbol);
    if (found != mergeable_pieces_.end()) {
      ids.push_back(found->second);
    } else {
      append_byte_fallback(symbol, ids);
    }
  }
}

void SentencePieceBpeTokenizer::append_byte_fallback(std::string_view symbol,
                                                     std::vector<int32_t>& ids) const {
  const auto has_byte_token = [this](char byte) {
    return byte_tokens_[static_cast<uint8_t>(byte)] >= 0;
  };
  bool all_bytes = true;
  for (const char byte : symbol) all_bytes = all_bytes && has_byte_token(byte);
  if (all_bytes) {
    for (const char byte : symbol) ids.push_back(byte_tokens_[static_cast<uint8_t>(byte)]);
    return;
  }
  if (vocabulary().unknown_id < 0) {
    char code_point[16];
    std::snprintf(code_point, sizeof code_point, "U+%04X",
                  static_cast<unsigned>(utf8::next(symbol, 0).code_point));
    throw InputError(std::string("text has the character ") + code_point +
                     ", which the vocabulary cannot represent (no byte tokens, no unknown token)");
  }
  ids.push_back(vocabulary().unknown_id);
}

std::string SentencePieceBpeTokenizer::token_bytes(int32_t id) const {
  check_id(id);
  return token_bytes_[id];
}

bool SentencePieceBpeTokenizer::decode_drops_leading_space(int32_t id) const {
  const TokenType type = type_of(id);
  return vocabulary().add_space_prefix &&
         (type == TokenType::kNormal || type == TokenType::kUserDefined) &&
         vocabulary().tokens[id].starts_with(kSpaceMarker);
}

}  // namespace servescope
