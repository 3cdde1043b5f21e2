#include "engine/tokenizer/utf8.h"

#include <cstdio>

#include "engine/core/error.h"

namespace servescope::utf8 {
namespace {

bool is_continuation(uint8_t byte) { return (byte & 0xC0) == 0x80; }

// The allowed range of the second byte depends on the lead byte (Unicode Table 3-7); this is
// what rules out overlong forms, surrogates and code points above U+10FFFF.
struct LeadInfo {
  size_t length;  // 0: cannot start a character
  uint8_t second_min;
  uint8_t second_max;
};

LeadInfo lead_info(uint8_t lead) {
  if (lead < 0x80) return {1, 0, 0};
  if (lead >= 0xC2 && lead <= 0xDF) return {2, 0x80, 0xBF};
  if (lead == 0xE0) return {3, 0xA0, 0xBF};
  if (lead == 0xED) return {3, 0x80, 0x9F};
  if (lead >= 0xE1 && lead <= 0xEF) return {3, 0x80, 0xBF};
  if (lead == 0xF0) return {4, 0x90, 0xBF};
  if (lead == 0xF4) return {4, 0x80, 0x8F};
  if (lead >= 0xF1 && lead <= 0xF3) return {4, 0x80, 0xBF};
  return {0, 0, 0};
}

}  // namespace

Step next(std::string_view text, size_t pos) {
  const auto byte_at = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte_at(pos);
  const LeadInfo info = lead_info(lead);
  if (info.length == 0) return {Step::Kind::kInvalid, 1, 0};
  if (info.length == 1) return {Step::Kind::kCharacter, 1, lead};

  char32_t code_point = lead & (0xFF >> (info.length + 1));
  for (size_t i = 1; i < info.length; ++i) {
    if (pos + i >= text.size()) return {Step::Kind::kIncomplete, i, 0};
    const uint8_t byte = byte_at(pos + i);
    const bool allowed = i == 1 ? (byte >= info.second_min && byte <= info.second_max)
                                : is_continuation(byte);
    if (!allowed) return {Step::Kind::kInvalid, i, 0};
    code_point = (code_point << 6) | (byte & 0x3F);
  }
  return {Step::Kind::kCharacter, info.length, code_point};
}

void validate(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const Step step = next(text, pos);
    if (step.kind != Step::Kind::kCharacter) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned>(static_cast<uint8_t>(text[pos])));
      throw InputError("text is not valid UTF-8: " +
                       std::string(step.kind == Step::Kind::kIncomplete ? "truncated" : "ill-formed") +
                       " character at byte offset " + std::to_string(pos) + " (byte " + byte + ")");
    }
    pos += step.length;
  }
}

void append(std::string& out, char32_t code_point) {
  const auto put = [&](uint32_t bits) { out.push_back(static_cast<char>(bits)); };
  const uint32_t cp = code_point;
  if (cp < 0x80) {
    put(cp);
  } else if (cp < 0x800) {
    put(0xC0 | (cp >> 6));
    put(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    put(0xE0 | (cp >> 12));
    put(0x80 | ((cp >> 6) & 0x3F));
    put(0x80 | (cp & 0x3F));
  } else {
    put(0xF0 | (cp >> 18));
    put(0x80 | ((cp >> 12) & 0x3F));
    put(0x80 | ((cp >> 6) & 0x3F));
    put(0x80 | (cp & 0x3F));
  }
}

}  // namespace servescope::utf8
