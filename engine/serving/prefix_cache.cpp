#include "engine/serving/prefix_cache.h"

#include <algorithm>

namespace servescope::serving {
namespace {

// splitmix64's finaliser: a cheap, well-mixed 64-bit step, identical on every platform.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

BlockHash chain_block_hash(BlockHash parent, std::span<const int32_t> block_tokens) {
  uint64_t h = mix(parent);
  for (const int32_t token : block_tokens) h = mix(h ^ static_cast<uint32_t>(token));
  return mix(h ^ block_tokens.size());
}

std::optional<PrefixCache::Hit> PrefixCache::find(BlockHash parent,
                                                  std::span<const int32_t> block_tokens) const {
  const BlockHash hash = chain_block_hash(parent, block_tokens);
  const auto it = entries_.find(hash);
  if (it == entries_.end()) return std::nullopt;
  const Entry& e = it->second;
  if (e.parent != parent || !std::ranges::equal(e.tokens, block_tokens)) return std::nullopt;
  return Hit{hash, e.block};
}

PrefixCache::Inserted PrefixCache::insert(BlockHash parent, std::span<const int32_t> block_tokens,
                                          BlockId block) {
  const BlockHash hash = chain_block_hash(parent, block_tokens);
  const auto [it, inserted] = entries_.try_emplace(
      hash, Entry{parent, std::vector<int32_t>(block_tokens.begin(), block_tokens.end()), block});
  return {hash, inserted};
}

void PrefixCache::erase(BlockHash hash) { entries_.erase(hash); }

}  // namespace servescope::serving
