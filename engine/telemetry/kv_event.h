// One change to the paged KV cache, as a view animates it: which sequence, which blocks, why.
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
};

std::string_view kv_event_kind_name(KvEventKind kind);

struct KvEvent {
  KvEventKind kind = KvEventKind::kAllocate;
  int64_t sequence = -1;          // -1 for kEvict: the block belonged to no live sequence
  std::vector<int32_t> blocks;    // block ids concerned, in block-table order
  int64_t tokens = 0;             // tokens concerned (prompt length, cached tokens, ...)
  int64_t blocks_used_after = 0;  // pool occupancy right after the change
};

}  // namespace servescope::telemetry
