// Changes to the paged KV cache, as a view animates them (which sequence, which blocks, why,
// and every token's keys and values written), and a snapshot of the whole block table for a
// consumer that fell behind. Replaying the events from an empty pool gives exactly the state
// of the snapshot at every step boundary (tests/serving/engine_live_test.cpp does so), and
// each event's blocks_used_after is the occupancy the replay gives right after it (a new
// sequence's kPrefixHit comes before its kAllocate, the kEvict of blocks about to be taken
// before the kAllocate or kAppend that takes them):
//
//   kAllocate   blocks[] taken fresh: reference count 1, fill 0, appended to the table
//   kPrefixHit  blocks[] shared: reference count + 1, appended to the table; the sequence's
//               written tokens start at `tokens` (their KV is already there)
//   kAppend     blocks[0] taken fresh for one more token slot: as kAllocate
//   kWrite      `tokens` tokens' keys and values written into blocks[0] from slot `offset`,
//               positions `position` .. position + tokens - 1: fill = max(fill, offset + tokens)
//   kIndex      blocks[] (full, written) indexed in the prefix cache: they become reusable
//   kFree /     every block of the table: reference count - 1; a block that reaches 0 and
//   kPreempt    holds no cached prefix keeps no valid KV (fill 0); the table is gone
//   kEvict      blocks[] leave the prefix cache; a free one keeps no valid KV (fill 0)
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace servescope::telemetry {

enum class KvEventKind {
  kAllocate,   // blocks taken for a new sequence's prompt (cached prefix blocks not included)
  kPrefixHit,  // blocks of a new sequence found in the prefix cache and shared, not computed
  kAppend,     // a block taken because a sequence's last block was full
  kFree,       // a finished sequence released its blocks
  kPreempt,    // a running sequence lost its blocks to make room; it is recomputed later
  kEvict,      // a free block's cached prefix was dropped so the block can hold new tokens
  kWrite,      // a run of tokens' keys and values written into one block by a forward pass
  kIndex,      // full blocks entered the prefix cache: later prompts may share them
  kFork,       // a new sample of a prompt took every block of the sequence that computed it
  // A sequence about to write into a block it shares took a block of its own: blocks
  // {shared, copy}; the first `tokens` slots were copied, the shared block lost one user.
  kCopyOnWrite,
};

// How many kinds there are: KvEventKind's values are 0 .. kKvEventKinds - 1.
inline constexpr int kKvEventKinds = static_cast<int>(KvEventKind::kCopyOnWrite) + 1;

std::string_view kv_event_kind_name(KvEventKind kind);

struct KvEvent {
  KvEventKind kind = KvEventKind::kAllocate;
  int64_t sequence = -1;          // -1 for kEvict: the block belonged to no live sequence
  std::vector<int32_t> blocks{};  // block ids concerned, in block-table order
  int64_t tokens = 0;             // tokens concerned (prompt length, cached tokens, ...)
  int64_t blocks_used_after = 0;  // pool occupancy right after the change
  // kWrite only: the first token's position in the sequence and its slot in blocks[0].
  int64_t position = -1;
  int64_t offset = -1;
  // Stamped by the engine: the step during which it happened (a change between steps, e.g. a
  // cancel, carries the index of the step that follows) and when, on the engine clock. -1 and
  // 0 for a pool used without an engine.
  int64_t step_index = -1;
  double time_ms = 0.0;
};

// One block in a snapshot.
struct KvBlockState {
  int32_t ref_count = 0;       // block tables holding it; 0: free
  int64_t fill = 0;            // slots holding valid keys and values (0 .. block size)
  bool cached_prefix = false;  // indexed in the prefix cache (reusable by a later prompt)

  bool operator==(const KvBlockState&) const = default;
};

// One sequence's block table in a snapshot.
struct KvSequenceTable {
  int64_t sequence = 0;
  std::vector<int32_t> blocks{};  // block of position p: blocks[p / block_size]
  int64_t tokens_written = 0;     // positions 0 .. tokens_written - 1 hold keys and values

  bool operator==(const KvSequenceTable&) const = default;
};

// The whole block table state, for a consumer to resynchronise from.
struct KvSnapshot {
  int64_t step_index = -1;  // the last step completed; -1 before the first
  double time_ms = 0.0;
  int64_t block_size = 0;
  std::vector<KvBlockState> blocks{};        // by block id
  std::vector<KvSequenceTable> sequences{};  // by sequence id
  // Bytes of keys and values per layer in the blocks in use (used blocks x block size x the
  // layer's key and value rows), and per layer as the cache holds them (every block).
  std::vector<uint64_t> layer_bytes_in_use{};
  std::vector<uint64_t> layer_bytes_reserved{};
};

}  // namespace servescope::telemetry
