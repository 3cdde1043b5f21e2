// KvBlockPool: byte accounting against the KV formula, block rounding, append at block
// boundaries, release, events and eviction order.
#include "engine/serving/kv_block_pool.h"

#include <gtest/gtest.h>

#include <numeric>
#include <ostream>
#include <vector>

#include "engine/core/error.h"

namespace servescope::serving {
namespace {

using telemetry::KvEvent;
using telemetry::KvEventKind;

// The test models' shapes (tests/data/models: llama 2 KV heads of 16, gpt2 4 heads of 16 with
// kv heads = heads), but with 3 layers: the layer count must not coincide with the two rows
// (key and value) every token stores per layer, or a formula could swap them unnoticed.
model::ModelConfig llama_test_config() {
  model::ModelConfig c;
  c.architecture = model::Architecture::kLlama;
  c.n_layers = 3;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  c.dim = 64;
  return c;
}

model::ModelConfig gpt2_test_config() {
  model::ModelConfig c;
  c.architecture = model::Architecture::kGpt2;
  c.n_layers = 3;
  c.n_heads = 4;
  c.n_kv_heads = 4;
  c.head_dim = 16;
  c.dim = 64;
  return c;
}

// Bytes per element as the formula in docs/ARCHITECTURE.md uses it; Q8_0 spends 34 bytes per 32.
double bytes_per_element(gguf::GgmlType type) {
  switch (type) {
    case gguf::GgmlType::F32:
      return 4.0;
    case gguf::GgmlType::F16:
      return 2.0;
    case gguf::GgmlType::Q8_0:
      return 34.0 / 32.0;
    default:
      ADD_FAILURE() << "not a KV type";
      return 0.0;
  }
}

std::vector<int32_t> iota_tokens(int64_t n, int32_t first = 0) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

struct ShapeAndType {
  model::ModelConfig config;
  gguf::GgmlType type;
};

std::ostream& operator<<(std::ostream& os, const ShapeAndType& c) {
  const bool llama = c.config.architecture == model::Architecture::kLlama;
  return os << (llama ? "llama" : "gpt2") << " " << gguf::type_name(c.type);
}

class KvAccountingTest : public ::testing::TestWithParam<ShapeAndType> {};

TEST_P(KvAccountingTest, BytesFollowTheFormulaWithBlockRounding) {
  const auto& [config, type] = GetParam();
  const KvLayout layout = kv_layout(config, type, 16);
  // 2 x layers x kv_heads x head_dim x bytes per element
  const double formula =
      2.0 * static_cast<double>(config.n_layers * config.n_kv_heads * config.head_dim) *
      bytes_per_element(type);
  EXPECT_EQ(static_cast<double>(kv_bytes_per_token(layout)), formula);
  // Each figure against the formula, not against another function of the same code.
  EXPECT_EQ(
      static_cast<double>(kv_bytes_per_token_per_layer(layout)),
      2.0 * static_cast<double>(config.n_kv_heads * config.head_dim) * bytes_per_element(type));
  EXPECT_EQ(static_cast<double>(kv_bytes_per_block(layout)), 16.0 * formula);

  KvBlockPool pool(layout, 10);
  const uint64_t per_token = pool.bytes_per_token();
  pool.allocate(1, iota_tokens(17));       // 2 blocks, 15 slots of rounding
  pool.allocate(2, iota_tokens(16, 100));  // exactly 1 block
  KvUsage u = pool.usage();
  EXPECT_EQ(u.blocks_total, 10);
  EXPECT_EQ(u.blocks_used, 3);
  EXPECT_EQ(u.blocks_free, 7);
  EXPECT_DOUBLE_EQ(u.usage, 0.3);
  EXPECT_EQ(u.bytes_total, 10 * 16 * per_token);
  EXPECT_EQ(u.bytes_allocated, 3 * 16 * per_token);
  EXPECT_EQ(u.bytes_allocated_per_layer * static_cast<uint64_t>(config.n_layers),
            u.bytes_allocated);
  ASSERT_EQ(u.sequences.size(), 2u);
  EXPECT_EQ(u.sequences[0].tokens, 17);
  EXPECT_EQ(u.sequences[0].blocks, 2);
  EXPECT_EQ(u.sequences[0].bytes_of_tokens, 17 * per_token);
  EXPECT_EQ(u.sequences[0].bytes_allocated, 32 * per_token);
  EXPECT_EQ(u.sequences[0].bytes_allocated_per_layer * static_cast<uint64_t>(config.n_layers),
            32 * per_token);
  EXPECT_EQ(u.sequences[1].bytes_allocated, u.sequences[1].bytes_of_tokens);

  // Appending 15 tokens fills sequence 1's second block; the 16th takes a third.
  for (int i = 0; i < 15; ++i) pool.append(1);
  EXPECT_EQ(pool.blocks_used(), 3);
  pool.append(1);
  EXPECT_EQ(pool.blocks_used(), 4);
  EXPECT_EQ(pool.usage().sequences[0].bytes_allocated, 48 * per_token);

  pool.free(1);
  pool.free(2);
  u = pool.usage();
  EXPECT_EQ(u.blocks_used, 0);
  EXPECT_EQ(u.bytes_allocated, 0u);
  EXPECT_TRUE(u.sequences.empty());
}

INSTANTIATE_TEST_SUITE_P(BothArchitecturesAllTypes, KvAccountingTest,
                         ::testing::Values(ShapeAndType{llama_test_config(), gguf::GgmlType::F32},
                                           ShapeAndType{llama_test_config(), gguf::GgmlType::F16},
                                           ShapeAndType{llama_test_config(), gguf::GgmlType::Q8_0},
                                           ShapeAndType{gpt2_test_config(), gguf::GgmlType::F32},
                                           ShapeAndType{gpt2_test_config(), gguf::GgmlType::F16},
                                           ShapeAndType{gpt2_test_config(), gguf::GgmlType::Q8_0}));

TEST(KvLayout, ExactBytesOfTheTestModels) {
  // (key, value) x 3 layers x row bytes; llama: kv_dim 32; gpt2: kv_dim 64. A Q8_0 row is
  // kv_dim / 32 blocks of 34 bytes.
  EXPECT_EQ(kv_bytes_per_token(kv_layout(llama_test_config(), gguf::GgmlType::F32)),
            2u * 3 * 32 * 4);
  EXPECT_EQ(kv_bytes_per_token(kv_layout(llama_test_config(), gguf::GgmlType::F16)),
            2u * 3 * 32 * 2);
  EXPECT_EQ(kv_bytes_per_token(kv_layout(llama_test_config(), gguf::GgmlType::Q8_0)), 2u * 3 * 34);
  EXPECT_EQ(kv_bytes_per_token(kv_layout(gpt2_test_config(), gguf::GgmlType::Q8_0)),
            2u * 3 * 2 * 34);
  EXPECT_EQ(kv_row_bytes(kv_layout(gpt2_test_config(), gguf::GgmlType::F16)), 128u);
}

TEST(KvLayout, TheCacheStoresF32F16AndQ8_0Only) {
  EXPECT_EQ(check_kv_type(gguf::GgmlType::F32), gguf::GgmlType::F32);
  EXPECT_EQ(check_kv_type(gguf::GgmlType::F16), gguf::GgmlType::F16);
  EXPECT_EQ(check_kv_type(gguf::GgmlType::Q8_0), gguf::GgmlType::Q8_0);
  EXPECT_THROW(check_kv_type(gguf::GgmlType::Q4_0), InputError);  // weights only, not the cache
  EXPECT_THROW(KvBlockPool(kv_layout(llama_test_config(), gguf::GgmlType::Q4_0), 4), InputError);
}

TEST(KvLayout, RejectsQ8_0RowsThatAreNotWholeBlocks) {
  KvLayout layout{2, 48, gguf::GgmlType::Q8_0, 16};
  EXPECT_THROW(validate(layout), InputError);
  EXPECT_THROW(KvBlockPool(layout, 4), InputError);
  layout.type = gguf::GgmlType::F16;
  EXPECT_NO_THROW(validate(layout));
  EXPECT_THROW(KvBlockPool(KvLayout{2, 32, gguf::GgmlType::F16, 0}, 4), InputError);
  EXPECT_THROW(KvBlockPool(KvLayout{2, 32, gguf::GgmlType::F16, 16}, 0), InputError);
}

TEST(KvBlockPool, CapacityInBytesKeepsWholeBlocks) {
  // 16 tokens x (key, value) x 3 layers x 32 elements x 2 bytes = 6144 bytes a block
  const KvLayout layout = kv_layout(llama_test_config(), gguf::GgmlType::F16);
  ASSERT_EQ(kv_bytes_per_block(layout), 6144u);
  EXPECT_EQ(KvBlockPool::with_capacity_bytes(layout, 3 * 6144 + 6143).blocks_total(), 3);
  EXPECT_THROW(KvBlockPool::with_capacity_bytes(layout, 6143), InputError);
}

TEST(KvBlockPool, AllocateRespectsCapacityAndAppendNeedsAFreeBlockAtABoundary) {
  KvBlockPool pool(KvLayout{1, 32, gguf::GgmlType::F32, 4}, 3);
  EXPECT_TRUE(pool.can_allocate(iota_tokens(12)));
  EXPECT_FALSE(pool.can_allocate(iota_tokens(13)));
  pool.allocate(7, iota_tokens(8));
  EXPECT_TRUE(pool.can_append(7));  // a third block is free
  pool.append(7);
  EXPECT_EQ(pool.blocks_free(), 0);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(pool.can_append(7));  // room left in the last block
    pool.append(7);
  }
  EXPECT_EQ(pool.sequence_tokens(7), 12);
  EXPECT_FALSE(pool.can_append(7));
  EXPECT_THROW(pool.append(7), std::logic_error);
  EXPECT_THROW(pool.allocate(7, iota_tokens(1)), std::logic_error);
  pool.free(7);
  EXPECT_EQ(pool.blocks_used(), 0);
  EXPECT_FALSE(pool.has_sequence(7));
}

TEST(KvBlockPool, ReportsEveryChangeToItsSink) {
  KvBlockPool pool(KvLayout{1, 32, gguf::GgmlType::F32, 4}, 4);
  std::vector<KvEvent> events;
  pool.set_event_sink([&](const KvEvent& e) { events.push_back(e); });
  pool.allocate(1, iota_tokens(4));
  pool.append(1);  // new block
  pool.append(1);  // same block: no event
  pool.preempt(1);
  pool.allocate(2, iota_tokens(3));
  pool.free(2);
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0].kind, KvEventKind::kAllocate);
  EXPECT_EQ(events[0].blocks.size(), 1u);
  EXPECT_EQ(events[0].tokens, 4);
  EXPECT_EQ(events[1].kind, KvEventKind::kAppend);
  EXPECT_EQ(events[1].blocks_used_after, 2);
  EXPECT_EQ(events[2].kind, KvEventKind::kPreempt);
  EXPECT_EQ(events[2].sequence, 1);
  EXPECT_EQ(events[2].blocks.size(), 2u);
  EXPECT_EQ(events[2].blocks_used_after, 0);
  EXPECT_EQ(events[3].kind, KvEventKind::kAllocate);
  EXPECT_EQ(events[4].kind, KvEventKind::kFree);
  EXPECT_EQ(telemetry::kv_event_kind_name(events[4].kind), "free");
}

TEST(BlockTable, AddressesPositionsThroughItsBlocks) {
  const std::vector<BlockId> blocks = {5, 2, 9};
  const BlockTable table{blocks, 4};
  EXPECT_EQ(table.block_of(6), 2);
  EXPECT_EQ(table.offset_of(6), 2);
  EXPECT_EQ(table.slot_of(6), 2 * 4 + 2);
  EXPECT_EQ(table.slots(10), (std::vector<int32_t>{20, 21, 22, 23, 8, 9, 10, 11, 36, 37}));
  EXPECT_TRUE(table.slots(0).empty());
}

}  // namespace
}  // namespace servescope::serving
