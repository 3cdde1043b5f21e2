#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"

namespace servescope {

std::string TextStreamDecoder::push(int32_t id) {
  pending_ += tokenizer_.token_bytes(id);
  std::string complete;
  size_t pos = 0;
  while (pos < pending_.size()) {
    const utf8::Step step = utf8::next(pending_, pos);
    if (step.kind == utf8::Step::Kind::kIncomplete) break;  // wait for the next token
    if (step.kind == utf8::Step::Kind::kCharacter) {
      complete.append(pending_, pos, step.length);
    } else {
      complete += utf8::kReplacementCharacter;
    }
    pos += step.length;
  }
  pending_.erase(0, pos);
  return complete;
}

std::string TextStreamDecoder::finish() {
  // Only an incomplete character can be left over (push() consumes everything else).
  std::string rest = pending_.empty() ? "" : std::string(utf8::kReplacementCharacter);
  pending_.clear();
  return rest;
}

}  // namespace servescope
