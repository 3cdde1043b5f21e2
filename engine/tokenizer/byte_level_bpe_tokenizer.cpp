#include "engine/tokenizer/byte_level_bpe_tokenizer.h"

#include <cstdio>
#include <optional>
#include <unordered_map>
#include <utility>

#include "engine/core/error.h"
#include "engine/tokenizer/greedy_merge.h"
#include "engine/tokenizer/utf8.h"

namespace servescope {
namespace {

// GPT-2's byte -> character map: the 188 printable bytes ('!'..'~', U+00A1..U+00AC,
// U+00AE..U+00FF) stand for themselves; the other 68 map, in byte order, to U+0100 onward.
std::array<char32_t, 256> gpt2_byte_code_points() {
  std::array<char32_t, 256> code_points{};
  char32_t next_stand_in = 0x100;
  for (unsigned byte = 0; byte < 256; ++byte) {
    const bool printable =
        (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
    code_points[byte] = printable ? char32_t{byte} : next_stand_in++;
  }
  return code_points;
}

ModelError bad_tokenizer(std::string_view source, const std::string& what) {
  return ModelError(ModelError::Kind::kBadTokenizer, std::string(source) + ": " + what);
}

const PreTokenizer& pre_tokenizer_of(const Vocabulary& vocabulary, std::string_view source) {
  try {
    return PreTokenizer::named(vocabulary.pre);
  } catch (const ModelError& e) {
    throw bad_tokenizer(source, e.what());
  }
}

}  // namespace

ByteLevelBpeTokenizer::ByteLevelBpeTokenizer(Vocabulary vocab, std::string_view source)
    : Tokenizer(std::move(vocab), source), pre_tokenizer_(pre_tokenizer_of(vocabulary(), source)) {
  const Vocabulary& checked = vocabulary();  // vocab has been moved into the base
  for (int32_t id = 0; id < size(); ++id) token_ids_.emplace(checked.tokens[id], id);

  std::unordered_map<char32_t, uint8_t> byte_of_code_point;
  const std::array<char32_t, 256> code_points = gpt2_byte_code_points();
  for (unsigned byte = 0; byte < 256; ++byte) {
    utf8::append(byte_chars_[byte], code_points[byte]);
    byte_of_code_point[code_points[byte]] = static_cast<uint8_t>(byte);
    if (!token_ids_.contains(byte_chars_[byte])) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", byte);
      throw bad_tokenizer(source, "tokenizer.ggml.tokens has no token for byte " +
                                      std::string(hex) + " (\"" + byte_chars_[byte] +
                                      "\"), which byte-level BPE needs");
    }
  }

  for (size_t rank = 0; rank < checked.merges.size(); ++rank) {
    const std::string& merge = checked.merges[rank];
    const std::string where =
        "tokenizer.ggml.merges[" + std::to_string(rank) + "] \"" + merge + "\"";
    const size_t space = merge.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == merge.size() ||
        merge.find(' ', space + 1) != std::string::npos) {
      throw bad_tokenizer(source, where + " is not of the form \"left right\"");
    }
    const std::string merged = merge.substr(0, space) + merge.substr(space + 1);
    if (!token_ids_.contains(merged)) {
      throw bad_tokenizer(
          source, where + " makes \"" + merged + "\", which is not in tokenizer.ggml.tokens");
    }
    merge_ranks_.emplace(merge,
                         static_cast<int32_t>(rank));  // a repeated merge keeps its first rank
  }

  // A token's bytes: its characters mapped back through the byte map; characters outside
  // the map (added tokens) stand for their own UTF-8.
  token_bytes_.resize(size());
  for (int32_t id = 0; id < size(); ++id) {
    if (type_of(id) == TokenType::kControl || type_of(id) == TokenType::kUnused) continue;
    const std::string& text = checked.tokens[id];
    for (size_t pos = 0; pos < text.size();) {
      const utf8::Step step = utf8::next(text, pos);
      const auto byte = step.kind == utf8::Step::Kind::kCharacter
                            ? byte_of_code_point.find(step.code_point)
                            : byte_of_code_point.end();
      if (byte != byte_of_code_point.end()) {
        token_bytes_[id].push_back(static_cast<char>(byte->second));
      } else {
        token_bytes_[id].append(text, pos, step.length);
      }
      pos += step.length;
    }
  }
}

void ByteLevelBpeTokenizer::encode_text(std::string_view text, std::vector<int32_t>& ids) const {
  for (const std::string_view word : pre_tokenizer_.split(text)) encode_word(word, ids);
}

void ByteLevelBpeTokenizer::encode_word(std::string_view word, std::vector<int32_t>& ids) const {
  std::string spelled;
  for (const char byte : word) spelled += byte_chars_[static_cast<uint8_t>(byte)];
  if (pre_tokenizer_.ignore_merges()) {
    if (const auto whole = token_ids_.find(spelled); whole != token_ids_.end()) {
      ids.push_back(whole->second);
      return;
    }
  }

  std::string pair_key;  // reused: "left right"
  const auto merge_priority = [&](std::string_view left,
                                  std::string_view right) -> std::optional<double> {
    pair_key.assign(left);
    pair_key += ' ';
    pair_key.append(right);
    const auto found = merge_ranks_.find(pair_key);
    if (found == merge_ranks_.end()) return std::nullopt;
    return -static_cast<double>(found->second);  // lower rank merges first
  };
  // Every symbol is a byte's character or a merge's result, both checked to be tokens.
  for (const std::string_view symbol : merge_greedily(spelled, merge_priority)) {
    ids.push_back(token_ids_.find(symbol)->second);
  }
}

std::string ByteLevelBpeTokenizer::token_bytes(int32_t id) const {
  check_id(id);
  return token_bytes_[id];
}

}  // namespace servescope
