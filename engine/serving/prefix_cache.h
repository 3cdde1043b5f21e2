// The index of computed KV blocks by content, for prefix reuse. A full block's key is a hash
// chained through its predecessors: hash(parent's hash, the block's token ids), so two blocks
// match only if the whole prefix up to and including them matches. Only full blocks are
// indexed; a sequence's partial last block is always recomputed (it would otherwise have to be
// copied before the sequence writes its next token into it). For live typing this means: a
// longer text reuses every full block of the earlier one, and an edit in the middle reuses the
// blocks before the block holding the first changed token.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace servescope::serving {

using BlockId = int32_t;
using BlockHash = uint64_t;

// The parent hash of a sequence's first block.
constexpr BlockHash kRootBlockHash = 0x5e7e5c09e0000001ull;

BlockHash chain_block_hash(BlockHash parent, std::span<const int32_t> block_tokens);

class PrefixCache {
 public:
  struct Hit {
    BlockHash hash;
    BlockId block;
  };

  // The block holding exactly these tokens after exactly this parent, if indexed. The token
  // ids and the parent are compared too, so a hash collision is a miss, never wrong KV.
  std::optional<Hit> find(BlockHash parent, std::span<const int32_t> block_tokens) const;

  // Indexes `block` under chain_block_hash(parent, tokens) and returns that hash. When another
  // block already holds the same content the index keeps it and `indexed` is false.
  struct Inserted {
    BlockHash hash;
    bool indexed;
  };
  Inserted insert(BlockHash parent, std::span<const int32_t> block_tokens, BlockId block);

  void erase(BlockHash hash);
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    BlockHash parent;
    std::vector<int32_t> tokens;
    BlockId block;
  };
  std::unordered_map<BlockHash, Entry> entries_;
};

}  // namespace servescope::serving
