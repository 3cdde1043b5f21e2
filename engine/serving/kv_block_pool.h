// The paged KV cache's bookkeeping: a pool of fixed-size blocks, a block table per sequence,
// reference counts for blocks shared through the prefix cache, and exact byte accounting.
// It tracks which block holds which token; the backends own the memory itself and address it
// through the block tables (block b, slot s holds token b * block_size + s of the table).
//
// Samples of one prompt share its blocks too (fork): a sequence about to write into a block it
// still shares takes a block of its own first and has the filled slots copied into it
// (copy-on-write), so no sequence ever sees another's tokens.
//
// A block is used (reference count > 0, in one or more block tables) or free. Free blocks wait
// in eviction order: blocks holding an indexed prefix are kept, least recently freed first in
// line, so a returning prefix is found again; blocks without one go to the front. Taking a
// free block that holds a prefix evicts it from the prefix cache.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/gguf/ggml_types.h"
#include "engine/model/model_config.h"
#include "engine/serving/prefix_cache.h"
#include "engine/telemetry/kv_event.h"

namespace servescope::serving {

using SequenceId = int64_t;

// The KV cache's element types: rows laid out exactly as GGML stores tensors of that type, so
// one name (gguf::GgmlType) serves weights and cache alike.
inline constexpr gguf::GgmlType kKvTypes[] = {gguf::GgmlType::F32, gguf::GgmlType::F16,
                                              gguf::GgmlType::Q8_0};

// `type` when the cache can store it (one of kKvTypes); InputError naming them otherwise.
gguf::GgmlType check_kv_type(gguf::GgmlType type);

// The cache's geometry. Per layer and token the cache holds a key row and a value row of
// kv_dim = n_kv_heads x head_dim elements each.
struct KvLayout {
  int64_t n_layers = 0;
  int64_t kv_dim = 0;
  gguf::GgmlType type = gguf::GgmlType::F16;
  int64_t block_size = 16;  // tokens per block
};

KvLayout kv_layout(const model::ModelConfig& config, gguf::GgmlType type, int64_t block_size = 16);

// InputError unless layers, kv_dim and block size are positive and, for Q8_0, kv_dim is a
// multiple of its 32-element block.
void validate(const KvLayout& layout);

// One token's key row (or value row) in one layer: row_bytes of kv_dim elements (4 x kv_dim for
// F32, 2 x kv_dim for F16, 34 x kv_dim / 32 for Q8_0).
uint64_t kv_row_bytes(const KvLayout& layout);
// 2 x kv_row_bytes: key and value of one token in one layer.
uint64_t kv_bytes_per_token_per_layer(const KvLayout& layout);
// 2 x layers x kv_row_bytes: what one more token costs.
uint64_t kv_bytes_per_token(const KvLayout& layout);
uint64_t kv_bytes_per_block(const KvLayout& layout);
// One layer's keys and values in `blocks` blocks: blocks x block_size x 2 x kv_row_bytes.
uint64_t layer_bytes_of_blocks(const KvLayout& layout, int64_t blocks);
// Blocks that hold `tokens` tokens: the last one may be partly empty.
int64_t blocks_for_tokens(int64_t tokens, int64_t block_size);

// Where a sequence's positions live in the paged cache: position p is in block
// blocks[p / block_size] at offset p % block_size, which is cache slot
// block * block_size + offset. The one place that addressing is written down.
struct BlockTable {
  std::span<const BlockId> blocks;
  int64_t block_size = 16;

  BlockId block_of(int64_t position) const {
    return blocks[static_cast<size_t>(position / block_size)];
  }
  int64_t offset_of(int64_t position) const { return position % block_size; }
  int32_t slot_of(int64_t position) const {
    return static_cast<int32_t>(block_of(position) * block_size + offset_of(position));
  }
  // The slots of positions 0 .. count - 1.
  std::vector<int32_t> slots(int64_t count) const;
};

struct KvSequenceUsage {
  SequenceId sequence = 0;
  int64_t tokens = 0;  // token slots reserved
  int64_t blocks = 0;
  int64_t shared_blocks = 0;     // blocks also in another sequence's table
  uint64_t bytes_of_tokens = 0;  // tokens x bytes per token
  uint64_t bytes_allocated = 0;  // blocks x bytes per block: the rounding is the difference
  uint64_t bytes_allocated_per_layer = 0;
};

// A snapshot of the pool, exact to the byte. Shared blocks count once in the pool totals and
// once in each sharing sequence's own figures.
struct KvUsage {
  gguf::GgmlType type = gguf::GgmlType::F16;
  int64_t n_layers = 0;
  int64_t block_size = 0;
  int64_t blocks_total = 0;
  int64_t blocks_used = 0;
  int64_t blocks_free = 0;
  int64_t blocks_free_cached = 0;  // free, but still holding a reusable prefix
  double usage = 0.0;              // 1 - free / total
  uint64_t bytes_per_token = 0;
  uint64_t bytes_per_token_per_layer = 0;
  uint64_t bytes_per_block = 0;
  uint64_t bytes_total = 0;
  uint64_t bytes_allocated = 0;            // used blocks x bytes per block
  uint64_t bytes_allocated_per_layer = 0;  // every layer holds the same share
  // The sequences' own block tables add up to this much more than the blocks in use: what
  // sharing (a cached prefix, samples of one prompt) saves against each sequence holding its
  // own copy of every block it reads.
  uint64_t bytes_saved_by_sharing = 0;
  int64_t prefix_lookup_tokens = 0;        // prompt tokens looked up in the prefix cache so far
  int64_t prefix_hit_tokens = 0;           // of those, found cached (not prefilled)
  std::vector<KvSequenceUsage> sequences;  // by sequence id
};

using KvEventSink = std::function<void(const telemetry::KvEvent&)>;

// Copy-on-write: the first `slots` slots of block `from` copied into block `to`, every layer,
// keys and values. The backend makes the copy before the forward pass that writes into `to`.
struct BlockCopy {
  BlockId from = 0;
  BlockId to = 0;
  int64_t slots = 0;
};

class KvBlockPool {
 public:
  // InputError for a bad layout or fewer than one block.
  KvBlockPool(const KvLayout& layout, int64_t num_blocks);
  // As many whole blocks as fit in `bytes`.
  static KvBlockPool with_capacity_bytes(const KvLayout& layout, uint64_t bytes);
  // Movable (std::list keeps its nodes, so free-list positions stay valid), not copyable.
  KvBlockPool(KvBlockPool&&) = default;
  KvBlockPool(const KvBlockPool&) = delete;
  KvBlockPool& operator=(const KvBlockPool&) = delete;
  KvBlockPool& operator=(KvBlockPool&&) = delete;

  // Every change is reported here, synchronously; keep the sink cheap (e.g. a TelemetryQueue).
  void set_event_sink(KvEventSink sink) { sink_ = std::move(sink); }

  // A new sequence: reserves slots for all of `tokens`, sharing the longest cached run of full
  // blocks (at most all but the last token, whose logits must be computed) and taking fresh
  // blocks for the rest. Returns the number of cached tokens, whose KV needs no prefill.
  // blocks_needed: blocks it would take from the free list (cached ones that are free
  // included).
  int64_t blocks_needed(std::span<const int32_t> tokens) const;
  bool can_allocate(std::span<const int32_t> tokens) const;
  int64_t allocate(SequenceId sequence, std::span<const int32_t> tokens);

  // One more token slot for a sequence; takes a block when its last one is full, or when the
  // slot falls in a block it shares (copy-on-write: see take_block_copies).
  bool can_append(SequenceId sequence) const;
  void append(SequenceId sequence);

  // A new sample of `parent`'s prompt: `child` gets the parent's block table, each block
  // shared (its reference count one higher), and the parent's tokens as written: nothing is
  // computed or copied now (kFork). The parent's slots must all be written; `child` new.
  void fork(SequenceId parent, SequenceId child);
  // The copies append() has promised since the last call, oldest first, handed over: the
  // caller makes each on the KV cache before the next forward pass writes into the blocks.
  std::vector<BlockCopy> take_block_copies();

  // Records that `computed_tokens` (the sequence's first tokens) now have their KV written:
  // reports the newly written ones (kWrite, one event per block touched) and indexes the full
  // blocks among them in the prefix cache (kIndex). Call after each step: blocks are shared
  // only once their KV exists.
  void cache_computed_blocks(SequenceId sequence, std::span<const int32_t> computed_tokens);

  // Release a sequence's blocks: it finished (free) or must make room (preempt). Only the
  // event differs. Blocks still shared stay with their other users.
  void free(SequenceId sequence);
  void preempt(SequenceId sequence);

  // Drops every free block's cached prefix (e.g. the model changed). Returns how many.
  int64_t evict_cached_blocks();

  const KvLayout& layout() const { return layout_; }
  int64_t blocks_total() const { return static_cast<int64_t>(blocks_.size()); }
  int64_t blocks_free() const { return static_cast<int64_t>(free_blocks_.size()); }
  int64_t blocks_used() const { return blocks_total() - blocks_free(); }
  uint64_t bytes_per_token() const { return kv_bytes_per_token(layout_); }

  bool has_sequence(SequenceId sequence) const { return tables_.contains(sequence); }
  std::span<const BlockId> block_table(SequenceId sequence) const;
  int64_t sequence_tokens(SequenceId sequence) const;
  int32_t ref_count(BlockId block) const { return blocks_.at(block).ref_count; }
  bool holds_cached_prefix(BlockId block) const { return blocks_.at(block).hash.has_value(); }

  KvUsage usage() const;
  // Every block's reference count, fill and prefix-cache state, and every block table; the
  // per-layer bytes in use. step_index, time_ms and layer_bytes_reserved are left for the
  // engine to fill in.
  telemetry::KvSnapshot snapshot() const;
  // Positions 0 .. tokens_written - 1 of the sequence hold keys and values.
  int64_t tokens_written(SequenceId sequence) const { return table(sequence).written; }

 private:
  struct Block {
    int32_t ref_count = 0;
    int64_t fill = 0;                            // slots holding valid keys and values
    std::optional<BlockHash> hash;               // set while indexed in the prefix cache
    std::list<BlockId>::iterator free_position;  // valid while ref_count == 0
  };
  struct SequenceTable {
    std::vector<BlockId> blocks;
    int64_t tokens = 0;          // slots reserved
    int64_t written = 0;         // leading slots whose KV is written
    int64_t indexed_blocks = 0;  // leading full blocks already in the prefix cache
    BlockHash last_hash = kRootBlockHash;
  };

  std::vector<PrefixCache::Hit> match_cached_prefix(std::span<const int32_t> tokens) const;
  int64_t free_blocks_among(const std::vector<PrefixCache::Hit>& hits) const;
  // The first `count` free blocks, taken fresh (reference count 1, fill 0).
  std::vector<BlockId> take_free_blocks(int64_t count);
  void share_block(BlockId block);
  // Blocks append() would take from the free list: 1 when the last block is full or shared.
  int64_t blocks_to_append(const SequenceTable& t) const;
  void copy_on_write(SequenceId sequence, SequenceTable& t);
  void release(SequenceId sequence, telemetry::KvEventKind kind);
  void drop_cached_prefix(BlockId block);
  SequenceTable& table(SequenceId sequence);
  const SequenceTable& table(SequenceId sequence) const;
  void emit(telemetry::KvEventKind kind, SequenceId sequence, std::vector<BlockId> blocks,
            int64_t tokens);
  void record_writes(SequenceId sequence, SequenceTable& t, int64_t written);

  KvLayout layout_;
  std::vector<Block> blocks_;
  std::list<BlockId> free_blocks_;  // front: reused (and evicted) first
  std::map<SequenceId, SequenceTable> tables_;
  PrefixCache prefix_cache_;
  int64_t prefix_lookup_tokens_ = 0;
  int64_t prefix_hit_tokens_ = 0;
  std::vector<BlockCopy> pending_copies_;
  KvEventSink sink_;
};

}  // namespace servescope::serving
