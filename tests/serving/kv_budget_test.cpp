// The KV pool sized by a memory budget: a file that declares a 128k (or 16M) context gets a pool
// of what the budget buys, not max batch x its context, generates as the same weights do with a
// short context, and a prompt longer than the pool holds is refused with the budget named.
#include "engine/serving/kv_budget.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/model/model.h"
#include "engine/serving/engine.h"
#include "tests/support/cli_runner.h"
#include "tests/support/gguf_copy.h"

namespace servescope::serving {
namespace {

const std::string kTestModel = std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/llama-f32.gguf";

EngineRequest greedy(std::vector<int32_t> prompt, int64_t max_tokens) {
  EngineRequest r;
  r.prompt_ids = std::move(prompt);
  r.max_tokens = max_tokens;
  return r;
}

std::vector<int32_t> generate(model::Model& m, const EngineConfig& config,
                              const EngineRequest& request) {
  Engine engine(*m.transformer, 0, config);
  const SequenceId id = engine.submit(request);
  engine.run_until_idle();
  return engine.output_ids(id);
}

class DeclaredContext : public testing::TestWithParam<uint32_t> {};

TEST_P(DeclaredContext, GetsAPoolOfItsBudgetAndGeneratesAsTheShortContextDoes) {
  // Named by its context: a parameterised test's name has a '/'.
  const std::string path = ::testing::TempDir() + "/long_context_" + std::to_string(GetParam()) +
                           "." + std::to_string(getpid()) + ".gguf";
  testing_support::write_gguf_copy(kTestModel,
                                   {{"llama.context_length", gguf::Value::u32(GetParam())}}, path);
  const auto long_context = model::load_model(path, compute::BackendKind::kCpu);
  std::filesystem::remove(path);
  ASSERT_EQ(long_context->config.context_length, GetParam());
  const auto short_context = model::load_model(kTestModel, compute::BackendKind::kCpu);

  const EngineConfig config;  // max batch 8, the default budget
  Engine engine(*long_context->transformer, 0, config);
  const KvUsage usage = engine.kv_usage();
  const uint64_t full_contexts =
      static_cast<uint64_t>(config.max_batch_size) * GetParam() * usage.bytes_per_token;
  EXPECT_LE(usage.bytes_total, std::min(default_kv_budget_bytes(), full_contexts));
  EXPECT_GT(usage.bytes_total, default_kv_budget_bytes() / 2);  // whole blocks of the budget
  // The cache's memory is the pool's: slots = blocks x block size.
  EXPECT_EQ(engine.kv_cache().slots, usage.blocks_total * usage.block_size);
  EXPECT_EQ(engine.scheduler().context_limit(),
            std::min<int64_t>(GetParam(), usage.blocks_total * usage.block_size));

  const EngineRequest request = greedy({1, 5, 9, 2}, 4);
  EXPECT_EQ(generate(*long_context, config, request), generate(*short_context, config, request));
}

INSTANTIATE_TEST_SUITE_P(LongContexts, DeclaredContext, testing::Values(131072u, 1u << 24));

TEST(KvBudget, SizesThePoolAndLimitsAPromptWithTheSettingNamed) {
  const auto m = model::load_model(kTestModel, compute::BackendKind::kCpu);
  EngineConfig config;
  config.block_size = 4;
  config.kv_type = gguf::GgmlType::F32;
  const uint64_t per_block = kv_bytes_per_block(kv_layout(m->config, config.kv_type, 4));
  config.kv_bytes = 5 * per_block + per_block / 2;  // five blocks and a half: five
  config.kv_budget_setting = "--kv-bytes";
  Engine engine(*m->transformer, 0, config);
  EXPECT_EQ(engine.pool().blocks_total(), 5);
  EXPECT_EQ(engine.kv_usage().bytes_total, 5 * per_block);
  EXPECT_EQ(engine.scheduler().context_limit(), 20);  // not the model's 128
  try {
    engine.submit(greedy(std::vector<int32_t>(21, 1), 1));
    ADD_FAILURE() << "a prompt longer than the budget holds was accepted";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()), "the prompt needs 21 tokens; the KV budget of " +
                                             iec_bytes(5 * per_block) +
                                             " holds 20 tokens; raise --kv-bytes");
  }
  // A prompt that fits grows until the pool is full, then stops as at the end of a context.
  const SequenceId id = engine.submit(greedy(std::vector<int32_t>(18, 1), 100));
  engine.run_until_idle();
  EXPECT_EQ(engine.sequence(id).finish_reason, telemetry::FinishReason::kContextFull);
  EXPECT_EQ(engine.sequence(id).tokens.size(), 20u);
}

TEST(KvBudget, NeverBuysMoreThanTheSequencesCanHold) {
  const auto m = model::load_model(kTestModel, compute::BackendKind::kCpu);
  EngineConfig config;
  config.max_batch_size = 2;
  config.kv_bytes = uint64_t{1} << 30;
  EXPECT_EQ(kv_block_count(config, m->config),
            2 * blocks_for_tokens(m->config.context_length, config.block_size));
}

TEST(KvBudget, LessThanOneBlockIsRefused) {
  const auto m = model::load_model(kTestModel, compute::BackendKind::kCpu);
  EngineConfig config;
  config.kv_bytes = 100;
  try {
    kv_block_count(config, m->config);
    ADD_FAILURE() << "a budget below one block was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(
        std::string(error.what()).find("the KV budget of 100 bytes is less than one KV block"),
        std::string::npos)
        << error.what();
  }
}

TEST(KvBudget, TheDefaultIsAFewHundredMiBAtMost) {
  EXPECT_GT(default_kv_budget_bytes(), 0u);
  EXPECT_LE(default_kv_budget_bytes(), kDefaultKvBudgetBytes);
  EXPECT_GT(physical_memory_bytes(), default_kv_budget_bytes());
}

TEST(KvBudget, SizesReadInBinaryUnits) {
  EXPECT_EQ(iec_bytes(512), "512 bytes");
  EXPECT_EQ(iec_bytes(40960), "40.0 KiB");
  EXPECT_EQ(iec_bytes(kDefaultKvBudgetBytes), "256.0 MiB");
  EXPECT_EQ(iec_bytes(uint64_t{3} << 29), "1.5 GiB");
}

}  // namespace
}  // namespace servescope::serving
