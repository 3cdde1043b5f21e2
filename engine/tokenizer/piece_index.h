// A hash map from token text to id that can be searched with a string_view (no copies).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace servescope {

struct TransparentStringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

using PieceIndex = std::unordered_map<std::string, int32_t, TransparentStringHash, std::equal_to<>>;

}  // namespace servescope
