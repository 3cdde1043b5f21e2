// GPT-2's pre-tokenisation, written out by hand (no regex engine). It splits text into the
// matches of
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// taken left to right, each the first alternative that matches at its position.
#pragma once

#include <string_view>
#include <vector>

namespace servescope {

// `text` must be valid UTF-8. The pieces are views into it and concatenate to it.
std::vector<std::string_view> split_gpt2_words(std::string_view text);

}  // namespace servescope
