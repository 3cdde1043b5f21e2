#include "engine/serving/kv_block_pool.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/core/error.h"

namespace servescope::serving {

using telemetry::KvEventKind;

gguf::GgmlType check_kv_type(gguf::GgmlType type) {
  for (const gguf::GgmlType kv : kKvTypes) {
    if (kv == type) return type;
  }
  throw InputError("the KV cache stores F32, F16 or Q8_0, not " +
                   std::string(gguf::type_name(type)));
}

KvLayout kv_layout(const model::ModelConfig& config, gguf::GgmlType type, int64_t block_size) {
  return KvLayout{config.n_layers, config.kv_dim(), type, block_size};
}

void validate(const KvLayout& layout) {
  if (layout.n_layers <= 0) throw InputError("KV cache: the model must have at least one layer");
  if (layout.kv_dim <= 0) throw InputError("KV cache: kv_heads x head_dim must be positive");
  if (layout.block_size <= 0) throw InputError("KV cache: block size must be at least 1 token");
  check_kv_type(layout.type);
  if (layout.type == gguf::GgmlType::Q8_0 && layout.kv_dim % gguf::kQuantBlock != 0) {
    throw InputError(
        "KV cache: Q8_0 stores rows in blocks of 32 elements, but kv_heads x "
        "head_dim = " +
        std::to_string(layout.kv_dim) + " is not a multiple of 32; use F16 or F32");
  }
}

uint64_t kv_row_bytes(const KvLayout& layout) {
  return gguf::row_bytes(layout.type, layout.kv_dim);
}

uint64_t kv_bytes_per_token_per_layer(const KvLayout& layout) { return 2 * kv_row_bytes(layout); }

uint64_t kv_bytes_per_token(const KvLayout& layout) {
  return static_cast<uint64_t>(layout.n_layers) * kv_bytes_per_token_per_layer(layout);
}

uint64_t kv_bytes_per_block(const KvLayout& layout) {
  return static_cast<uint64_t>(layout.block_size) * kv_bytes_per_token(layout);
}

// One layer's keys and values in `blocks` blocks, from the layer's row size (every layer has
// the same kv_dim, so the same figure serves each).
uint64_t layer_bytes_of_blocks(const KvLayout& layout, int64_t blocks) {
  return static_cast<uint64_t>(blocks) * static_cast<uint64_t>(layout.block_size) *
         kv_bytes_per_token_per_layer(layout);
}

int64_t blocks_for_tokens(int64_t tokens, int64_t block_size) {
  return (tokens + block_size - 1) / block_size;
}

std::vector<int32_t> BlockTable::slots(int64_t count) const {
  std::vector<int32_t> result;
  result.reserve(static_cast<size_t>(count));
  for (int64_t p = 0; p < count; ++p) result.push_back(slot_of(p));
  return result;
}

KvBlockPool::KvBlockPool(const KvLayout& layout, int64_t num_blocks) : layout_(layout) {
  validate(layout);
  if (num_blocks <= 0) {
    throw InputError("KV cache: capacity must be at least one block (" +
                     std::to_string(kv_bytes_per_block(layout)) + " bytes)");
  }
  if (num_blocks > (int64_t{1} << 30)) throw InputError("KV cache: too many blocks");
  blocks_.resize(static_cast<size_t>(num_blocks));
  for (BlockId b = 0; b < static_cast<BlockId>(num_blocks); ++b) {
    blocks_[b].free_position = free_blocks_.insert(free_blocks_.end(), b);
  }
}

KvBlockPool KvBlockPool::with_capacity_bytes(const KvLayout& layout, uint64_t bytes) {
  validate(layout);
  return KvBlockPool(layout, static_cast<int64_t>(bytes / kv_bytes_per_block(layout)));
}

// Walks the full blocks of `tokens` through the prefix cache until the first miss. The last
// token is never matched: the step that processes it produces the sequence's next logits.
std::vector<PrefixCache::Hit> KvBlockPool::match_cached_prefix(
    std::span<const int32_t> tokens) const {
  std::vector<PrefixCache::Hit> hits;
  const auto bs = static_cast<size_t>(layout_.block_size);
  const size_t matchable_blocks = tokens.empty() ? 0 : (tokens.size() - 1) / bs;
  BlockHash parent = kRootBlockHash;
  for (size_t i = 0; i < matchable_blocks; ++i) {
    const auto hit = prefix_cache_.find(parent, tokens.subspan(i * bs, bs));
    if (!hit) break;
    hits.push_back(*hit);
    parent = hit->hash;
  }
  return hits;
}

int64_t KvBlockPool::free_blocks_among(const std::vector<PrefixCache::Hit>& hits) const {
  return std::ranges::count_if(
      hits, [&](const PrefixCache::Hit& h) { return blocks_[h.block].ref_count == 0; });
}

int64_t KvBlockPool::blocks_needed(std::span<const int32_t> tokens) const {
  const auto hits = match_cached_prefix(tokens);
  return blocks_for_tokens(static_cast<int64_t>(tokens.size()), layout_.block_size) +
         free_blocks_among(hits) - static_cast<int64_t>(hits.size());
}

bool KvBlockPool::can_allocate(std::span<const int32_t> tokens) const {
  return blocks_needed(tokens) <= blocks_free();
}

int64_t KvBlockPool::allocate(SequenceId sequence, std::span<const int32_t> tokens) {
  if (tables_.contains(sequence)) {
    throw std::logic_error("KvBlockPool::allocate: sequence " + std::to_string(sequence) +
                           " already has blocks");
  }
  if (tokens.empty()) throw std::logic_error("KvBlockPool::allocate: no tokens");
  if (!can_allocate(tokens)) throw std::logic_error("KvBlockPool::allocate: not enough blocks");

  // Each change is reported as it is made, so that every event's occupancy is the one the
  // events before it give: the shared blocks, then any eviction, then the fresh blocks.
  const auto hits = match_cached_prefix(tokens);
  SequenceTable t;
  for (const PrefixCache::Hit& hit : hits) {
    share_block(hit.block);
    t.blocks.push_back(hit.block);
    t.last_hash = hit.hash;
  }
  t.indexed_blocks = static_cast<int64_t>(hits.size());
  const int64_t cached_tokens = t.indexed_blocks * layout_.block_size;
  if (!hits.empty()) emit(KvEventKind::kPrefixHit, sequence, t.blocks, cached_tokens);
  const auto n = static_cast<int64_t>(tokens.size());
  std::vector<BlockId> fresh =
      take_free_blocks(blocks_for_tokens(n, layout_.block_size) - t.indexed_blocks);
  t.blocks.insert(t.blocks.end(), fresh.begin(), fresh.end());
  t.tokens = n;
  t.written = cached_tokens;
  tables_.emplace(sequence, std::move(t));

  prefix_lookup_tokens_ += n;
  prefix_hit_tokens_ += cached_tokens;
  emit(KvEventKind::kAllocate, sequence, std::move(fresh), n);
  return cached_tokens;
}

int64_t KvBlockPool::blocks_to_append(const SequenceTable& t) const {
  if (t.tokens % layout_.block_size == 0) return 1;
  return blocks_[t.blocks.back()].ref_count > 1 ? 1 : 0;
}

bool KvBlockPool::can_append(SequenceId sequence) const {
  return blocks_to_append(table(sequence)) <= blocks_free();
}

void KvBlockPool::append(SequenceId sequence) {
  SequenceTable& t = table(sequence);
  if (blocks_to_append(t) > blocks_free()) {
    throw std::logic_error("KvBlockPool::append: no free block");
  }
  if (t.tokens % layout_.block_size != 0 && blocks_[t.blocks.back()].ref_count > 1) {
    copy_on_write(sequence, t);
  }
  if (t.tokens % layout_.block_size == 0) {
    const BlockId block = take_free_blocks(1).front();
    t.blocks.push_back(block);
    ++t.tokens;
    emit(KvEventKind::kAppend, sequence, {block}, 1);
    return;
  }
  ++t.tokens;
}

// The next slot falls in a block others share: the sequence takes a fresh block with a copy of
// the slots before it, and leaves the shared one to the others.
void KvBlockPool::copy_on_write(SequenceId sequence, SequenceTable& t) {
  const BlockId shared = t.blocks.back();
  const int64_t filled = t.tokens % layout_.block_size;
  const BlockId own = take_free_blocks(1).front();
  --blocks_[shared].ref_count;  // others still hold it: it stays in use
  blocks_[own].fill = filled;
  t.blocks.back() = own;
  pending_copies_.push_back({shared, own, filled});
  emit(KvEventKind::kCopyOnWrite, sequence, {shared, own}, filled);
}

void KvBlockPool::fork(SequenceId parent, SequenceId child) {
  if (tables_.contains(child)) {
    throw std::logic_error("KvBlockPool::fork: sequence " + std::to_string(child) +
                           " already has blocks");
  }
  const SequenceTable& from = table(parent);
  if (from.written != from.tokens) {
    throw std::logic_error("KvBlockPool::fork: the parent's slots are not all written");
  }
  for (const BlockId block : from.blocks) share_block(block);
  SequenceTable t = from;  // same blocks, tokens, written and prefix-cache position
  std::vector<BlockId> blocks = t.blocks;
  const int64_t tokens = t.tokens;
  tables_.emplace(child, std::move(t));
  emit(KvEventKind::kFork, child, std::move(blocks), tokens);
}

std::vector<BlockCopy> KvBlockPool::take_block_copies() {
  std::vector<BlockCopy> copies;
  copies.swap(pending_copies_);
  return copies;
}

void KvBlockPool::cache_computed_blocks(SequenceId sequence,
                                        std::span<const int32_t> computed_tokens) {
  SequenceTable& t = table(sequence);
  if (static_cast<int64_t>(computed_tokens.size()) > t.tokens) {
    throw std::logic_error("KvBlockPool::cache_computed_blocks: more tokens than slots");
  }
  record_writes(sequence, t, static_cast<int64_t>(computed_tokens.size()));
  const auto bs = static_cast<size_t>(layout_.block_size);
  const auto full_blocks = static_cast<int64_t>(computed_tokens.size() / bs);
  std::vector<BlockId> indexed;
  for (int64_t i = t.indexed_blocks; i < full_blocks; ++i) {
    const BlockId block = t.blocks[i];
    const auto inserted =
        prefix_cache_.insert(t.last_hash, computed_tokens.subspan(i * bs, bs), block);
    // A block with the same content already indexed keeps its place; this one stays unindexed.
    if (inserted.indexed) {
      blocks_[block].hash = inserted.hash;
      indexed.push_back(block);
    }
    t.last_hash = inserted.hash;
  }
  t.indexed_blocks = std::max(t.indexed_blocks, full_blocks);
  if (!indexed.empty()) {
    const auto tokens = static_cast<int64_t>(indexed.size()) * layout_.block_size;
    emit(KvEventKind::kIndex, sequence, std::move(indexed), tokens);
  }
}

// One kWrite per block the newly written positions touch.
void KvBlockPool::record_writes(SequenceId sequence, SequenceTable& t, int64_t written) {
  const BlockTable table{t.blocks, layout_.block_size};
  for (int64_t p = t.written; p < written;) {
    const BlockId block = table.block_of(p);
    const int64_t offset = table.offset_of(p);
    const int64_t count = std::min(layout_.block_size - offset, written - p);
    Block& b = blocks_[block];
    b.fill = std::max(b.fill, offset + count);
    if (sink_) {
      sink_(telemetry::KvEvent{.kind = KvEventKind::kWrite,
                               .sequence = sequence,
                               .blocks = {block},
                               .tokens = count,
                               .blocks_used_after = blocks_used(),
                               .position = p,
                               .offset = offset});
    }
    p += count;
  }
  t.written = std::max(t.written, written);
}

void KvBlockPool::free(SequenceId sequence) { release(sequence, KvEventKind::kFree); }

void KvBlockPool::preempt(SequenceId sequence) { release(sequence, KvEventKind::kPreempt); }

int64_t KvBlockPool::evict_cached_blocks() {
  std::vector<BlockId> evicted;
  for (const BlockId block : free_blocks_) {
    if (!blocks_[block].hash) continue;
    drop_cached_prefix(block);
    evicted.push_back(block);
  }
  const auto count = static_cast<int64_t>(evicted.size());
  if (count > 0) emit(KvEventKind::kEvict, -1, std::move(evicted), count * layout_.block_size);
  return count;
}

std::span<const BlockId> KvBlockPool::block_table(SequenceId sequence) const {
  return table(sequence).blocks;
}

int64_t KvBlockPool::sequence_tokens(SequenceId sequence) const { return table(sequence).tokens; }

KvUsage KvBlockPool::usage() const {
  KvUsage u;
  u.type = layout_.type;
  u.n_layers = layout_.n_layers;
  u.block_size = layout_.block_size;
  u.blocks_total = blocks_total();
  u.blocks_free = blocks_free();
  u.blocks_used = blocks_used();
  u.blocks_free_cached =
      std::ranges::count_if(free_blocks_, [&](BlockId b) { return blocks_[b].hash.has_value(); });
  u.usage = 1.0 - static_cast<double>(u.blocks_free) / static_cast<double>(u.blocks_total);
  u.bytes_per_token = kv_bytes_per_token(layout_);
  u.bytes_per_token_per_layer = kv_bytes_per_token_per_layer(layout_);
  u.bytes_per_block = kv_bytes_per_block(layout_);
  u.bytes_total = static_cast<uint64_t>(u.blocks_total) * u.bytes_per_block;
  u.bytes_allocated = static_cast<uint64_t>(u.blocks_used) * u.bytes_per_block;
  u.bytes_allocated_per_layer = layer_bytes_of_blocks(layout_, u.blocks_used);
  u.prefix_lookup_tokens = prefix_lookup_tokens_;
  u.prefix_hit_tokens = prefix_hit_tokens_;
  int64_t table_blocks = 0;
  for (const auto& [id, t] : tables_) {
    table_blocks += static_cast<int64_t>(t.blocks.size());
    KvSequenceUsage s;
    s.sequence = id;
    s.tokens = t.tokens;
    s.blocks = static_cast<int64_t>(t.blocks.size());
    s.shared_blocks =
        std::ranges::count_if(t.blocks, [&](BlockId b) { return blocks_[b].ref_count > 1; });
    s.bytes_of_tokens = static_cast<uint64_t>(t.tokens) * u.bytes_per_token;
    s.bytes_allocated = static_cast<uint64_t>(s.blocks) * u.bytes_per_block;
    s.bytes_allocated_per_layer = layer_bytes_of_blocks(layout_, s.blocks);
    u.sequences.push_back(s);
  }
  u.bytes_saved_by_sharing = static_cast<uint64_t>(table_blocks - u.blocks_used) * u.bytes_per_block;
  return u;
}

telemetry::KvSnapshot KvBlockPool::snapshot() const {
  telemetry::KvSnapshot s;
  s.block_size = layout_.block_size;
  for (const Block& b : blocks_) s.blocks.push_back({b.ref_count, b.fill, b.hash.has_value()});
  for (const auto& [id, t] : tables_) s.sequences.push_back({id, t.blocks, t.written});
  // Every layer stores kv_dim-wide key and value rows (one KvLayout for the model).
  s.layer_bytes_in_use.assign(static_cast<size_t>(layout_.n_layers),
                              layer_bytes_of_blocks(layout_, blocks_used()));
  return s;
}

std::vector<BlockId> KvBlockPool::take_free_blocks(int64_t count) {
  // The cached prefixes of the blocks about to be taken are dropped first, one kEvict per
  // block (the lessons count evictions), reported while the blocks are still free: their
  // occupancy is the one before the blocks are taken (reported with them, by the caller's
  // kAllocate or kAppend).
  auto next = free_blocks_.begin();
  for (int64_t i = 0; i < count; ++i, ++next) {
    if (!blocks_[*next].hash) continue;
    drop_cached_prefix(*next);
    emit(KvEventKind::kEvict, -1, {*next}, layout_.block_size);
  }
  std::vector<BlockId> taken;
  for (int64_t i = 0; i < count; ++i) {
    const BlockId block = free_blocks_.front();
    free_blocks_.pop_front();
    blocks_[block].ref_count = 1;
    blocks_[block].fill = 0;
    taken.push_back(block);
  }
  return taken;
}

void KvBlockPool::share_block(BlockId block) {
  Block& b = blocks_[block];
  if (b.ref_count == 0) free_blocks_.erase(b.free_position);
  ++b.ref_count;
}

void KvBlockPool::release(SequenceId sequence, KvEventKind kind) {
  SequenceTable& t = table(sequence);
  // Tail blocks first: among blocks with a cached prefix they end up first in line for
  // eviction, so the start of a prefix, which more requests share, outlives its end.
  for (auto it = t.blocks.rbegin(); it != t.blocks.rend(); ++it) {
    Block& b = blocks_[*it];
    if (--b.ref_count > 0) continue;
    // Without a cached prefix nothing will read its keys and values again.
    if (!b.hash) b.fill = 0;
    b.free_position = b.hash ? free_blocks_.insert(free_blocks_.end(), *it)
                             : free_blocks_.insert(free_blocks_.begin(), *it);
  }
  std::vector<BlockId> blocks = std::move(t.blocks);
  const int64_t tokens = t.tokens;
  tables_.erase(sequence);
  emit(kind, sequence, std::move(blocks), tokens);
}

void KvBlockPool::drop_cached_prefix(BlockId block) {
  prefix_cache_.erase(*blocks_[block].hash);
  blocks_[block].hash.reset();
  if (blocks_[block].ref_count == 0) blocks_[block].fill = 0;
}

namespace {

[[noreturn]] void throw_unknown_sequence(SequenceId sequence) {
  throw std::logic_error("KvBlockPool: sequence " + std::to_string(sequence) + " has no blocks");
}

}  // namespace

KvBlockPool::SequenceTable& KvBlockPool::table(SequenceId sequence) {
  const auto it = tables_.find(sequence);
  if (it == tables_.end()) throw_unknown_sequence(sequence);
  return it->second;
}

const KvBlockPool::SequenceTable& KvBlockPool::table(SequenceId sequence) const {
  const auto it = tables_.find(sequence);
  if (it == tables_.end()) throw_unknown_sequence(sequence);
  return it->second;
}

void KvBlockPool::emit(KvEventKind kind, SequenceId sequence, std::vector<BlockId> blocks,
                       int64_t tokens) {
  if (!sink_) return;
  sink_(telemetry::KvEvent{kind, sequence, std::move(blocks), tokens, blocks_used()});
}

}  // namespace servescope::serving
