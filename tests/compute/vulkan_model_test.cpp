// Whole models on Vulkan against the CPU backend (and the PyTorch golden data): every test
// model, both architectures, every weight type. Logits within 1e-3 at every prompt
// position, identical greedy continuations, ragged batches over a paged KV cache of every KV
// type, validation-clean.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "engine/model/model.h"
#include "engine/serving/generator.h"
#include "tests/compute/vulkan_test_support.h"
#include "tests/support/attention_golden.h"
#include "tests/support/test_models.h"

namespace servescope {
namespace {

const std::string kModels = std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/";

struct Golden {
  std::vector<int32_t> prompt_ids;
  std::vector<std::vector<float>> logits;
  std::vector<int32_t> greedy_ids;
};

Golden read_golden(const std::string& name) {
  std::ifstream in(kModels + name + ".json");
  const auto doc = nlohmann::json::parse(in);
  return {doc["prompt_ids"].get<std::vector<int32_t>>(),
          doc["logits"].get<std::vector<std::vector<float>>>(),
          doc["greedy_ids"].get<std::vector<int32_t>>()};
}

float max_abs_difference(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  float worst = 0.0f;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    worst = std::max(worst, std::abs(a[i] - b[i]));
  }
  return worst;
}

// The parameter is a test model's name, with ":split" to run it on a Vulkan backend whose
// bindings hold 32 F32 KV rows, a few KiB (the SERVESCOPE_VULKAN_MAX_BINDING_BYTES test hook):
// every weight is split into chunks of rows, the KV stores of context_length (128) slots into
// 4 (F32), 2 (F16) and 2 (Q8_0) parts, the ragged batch's F32 pool of 35 slots into 2.
class VulkanModel : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    SERVESCOPE_SKIP_WITHOUT_VULKAN();
    compute::vulkan::enable_validation();
    cpu_ = model::load_model(kModels + model_name() + ".gguf", compute::BackendKind::kCpu);
    if (split_bindings()) {
      const int64_t limit = cpu_->config.kv_dim() * 4 * 32;
      setenv("SERVESCOPE_VULKAN_MAX_BINDING_BYTES", std::to_string(limit).c_str(), 1);
    }
    vk_ = model::load_model(kModels + model_name() + ".gguf", compute::BackendKind::kVulkan);
    unsetenv("SERVESCOPE_VULKAN_MAX_BINDING_BYTES");
    vk_backend_ = dynamic_cast<compute::vulkan::VulkanBackend*>(vk_->backend.get());
    ASSERT_NE(vk_backend_, nullptr);
  }
  std::string model_name() const { return GetParam().substr(0, GetParam().find(':')); }
  bool split_bindings() const { return GetParam().ends_with(":split"); }
  void TearDown() override {
    if (vk_backend_) compute::vulkan::expect_validation_clean(vk_backend_->validation_log());
  }

  std::unique_ptr<model::Model> cpu_, vk_;
  compute::vulkan::VulkanBackend* vk_backend_ = nullptr;
};

TEST_P(VulkanModel, LogitsMatchCpuAtEveryPosition) {
  const Golden golden = read_golden(model_name());
  auto cpu_cache =
      model::create_kv_cache(cpu_->config, *cpu_->backend, cpu_->config.context_length);
  auto vk_cache = model::create_kv_cache(vk_->config, *vk_->backend, vk_->config.context_length);
  const auto expected = cpu_->transformer->forward(golden.prompt_ids, cpu_cache, true);
  const auto actual = vk_->transformer->forward(golden.prompt_ids, vk_cache, true);
  const auto vocab = static_cast<size_t>(vk_->config.vocab_size);
  ASSERT_EQ(actual.size(), golden.logits.size() * vocab);
  float worst = 0.0f;
  for (size_t pos = 0; pos < golden.logits.size(); ++pos) {
    const std::span<const float> row(actual.data() + pos * vocab, vocab);
    const float vs_cpu = max_abs_difference(row, {expected.data() + pos * vocab, vocab});
    EXPECT_LT(vs_cpu, 1e-3f) << "position " << pos;
    EXPECT_LT(max_abs_difference(row, golden.logits[pos]), 1e-3f)
        << "position " << pos << " vs PyTorch";
    worst = std::max(worst, vs_cpu);
  }
  RecordProperty("max_abs_difference_vs_cpu", std::to_string(worst));
  std::cout << GetParam() << ": max |vulkan - cpu| over all prompt logits = " << worst << "\n";
}

TEST_P(VulkanModel, GreedyContinuationMatchesCpu) {
  const Golden golden = read_golden(model_name());
  serving::EngineRequest request;
  request.prompt_ids = golden.prompt_ids;
  request.max_tokens = static_cast<int64_t>(golden.greedy_ids.size());
  const auto expected = serving::generate(*cpu_->transformer, request);
  const auto actual = serving::generate(*vk_->transformer, request);
  EXPECT_EQ(actual.generated_ids, expected.generated_ids);
  EXPECT_EQ(actual.generated_ids, golden.greedy_ids);
  // A decode step is one submit.
  EXPECT_EQ(vk_backend_->last_step_timings().submits, 1u);
}

// The dispatches of a one-token decode step, counted from the operations: embed; per llama
// layer norm, the q|k|v product, one rope for q and k, store_kv, attention, the output
// product, add+norm, the gate|up product, silu_mul and the down product; add+norm and the
// logits product. Before q|k|v and gate|up were fused a llama layer took 13 (29 for the
// 2-layer test models, now 23). GPT-2 adds the position embedding and has 9 per layer. The
// llama family's variants add: gemma's embedding scale, gemma2's final soft-cap, two post-block
// norms per layer (gemma2, gemma3) and two per-head q/k norms per layer (gemma3).
TEST_P(VulkanModel, DecodeStepDispatches) {
  const Golden golden = read_golden(model_name());
  auto cache = model::create_kv_cache(vk_->config, *vk_->backend, vk_->config.context_length);
  vk_->transformer->forward(golden.prompt_ids, cache, false);
  vk_->transformer->forward(std::span(golden.greedy_ids).first(1), cache, false);
  const auto layers = static_cast<uint32_t>(vk_->config.n_layers);
  const model::ModelConfig& c = vk_->config;
  uint32_t expected = 4 + 9 * layers;  // gpt2
  if (c.architecture != model::Architecture::kGpt2) {
    expected = 3 + 10 * layers + (c.embedding_scale > 0.0f ? 1 : 0) +
               (c.final_softcap > 0.0f ? 1 : 0) + layers * (c.post_norms ? 2 : 0) +
               layers * (c.qk_norm ? 2 : 0);
  }
  // Split weights: one product dispatch per chunk of rows.
  if (split_bindings()) {
    EXPECT_GT(vk_backend_->last_step_timings().dispatches, expected);
  } else {
    EXPECT_EQ(vk_backend_->last_step_timings().dispatches, expected);
  }
}

TEST_P(VulkanModel, CachedDecodingAndChunkedPrefillMatchCpu) {
  const Golden golden = read_golden(model_name());
  std::vector<int32_t> sequence = golden.prompt_ids;
  sequence.insert(sequence.end(), golden.greedy_ids.begin(), golden.greedy_ids.end());
  auto cpu_cache =
      model::create_kv_cache(cpu_->config, *cpu_->backend, cpu_->config.context_length);
  auto vk_cache = model::create_kv_cache(vk_->config, *vk_->backend, vk_->config.context_length);
  const std::span ids(sequence);
  // Uneven chunks: 5 tokens (tiled kernel), 1, 3 (matrix-vector kernel), then one at a time.
  size_t at = 0;
  for (const size_t chunk : {size_t{5}, size_t{1}, size_t{3}}) {
    const auto expected = cpu_->transformer->forward(ids.subspan(at, chunk), cpu_cache);
    const auto actual = vk_->transformer->forward(ids.subspan(at, chunk), vk_cache);
    EXPECT_LT(max_abs_difference(actual, expected), 1e-3f) << "chunk at " << at;
    at += chunk;
  }
  for (; at < sequence.size(); ++at) {
    const auto expected = cpu_->transformer->forward(ids.subspan(at, 1), cpu_cache);
    const auto actual = vk_->transformer->forward(ids.subspan(at, 1), vk_cache);
    EXPECT_LT(max_abs_difference(actual, expected), 1e-3f) << "position " << at;
  }
}

// One sequence of a ragged batch: its tokens and the KV slot of each of its positions.
struct BatchSequence {
  std::vector<int32_t> ids;
  std::vector<int32_t> slots;
  int64_t done = 0;  // tokens already run
};

// A sequence's share of one step: `count` new tokens (a prefill chunk, or 1 to decode).
struct StepPart {
  size_t sequence;
  int64_t count;
  model::LogitRows logits;
};

// Four sequences (rotations of the golden tokens) whose slots are scattered over one shared
// pool, run in three steps that mix prefill chunks and decode tokens. Each step equals the
// CPU backend (1e-3; 1e-2 with an F16 cache) and, row for row, each of its sequences run alone on
// Vulkan (1e-4).
TEST_P(VulkanModel, RaggedBatchMatchesCpuAndEachSequenceAlone) {
  using model::LogitRows;
  const Golden golden = read_golden(model_name());
  std::vector<int32_t> tokens = golden.prompt_ids;
  tokens.insert(tokens.end(), golden.greedy_ids.begin(), golden.greedy_ids.end());
  const std::vector<std::vector<StepPart>> steps = {
      {{0, 5, LogitRows::kLast}, {1, 3, LogitRows::kAll}, {2, 1, LogitRows::kLast}},
      {{0, 1, LogitRows::kLast},
       {1, 4, LogitRows::kAll},
       {2, 1, LogitRows::kNone},
       {3, 6, LogitRows::kLast}},
      {{3, 1, LogitRows::kAll},
       {0, 1, LogitRows::kLast},
       {1, 1, LogitRows::kLast},
       {2, 1, LogitRows::kLast}},
  };
  constexpr size_t kSequences = 4;
  const int64_t longest = 8;  // positions of sequence 1
  ASSERT_GE(static_cast<int64_t>(tokens.size()), longest);
  const int64_t pool = 4 * longest + 3;
  const auto vocab = static_cast<size_t>(vk_->config.vocab_size);

  for (const gguf::GgmlType kv_type :
       {gguf::GgmlType::F32, gguf::GgmlType::F16, gguf::GgmlType::Q8_0}) {
    if (kv_type == gguf::GgmlType::Q8_0 && vk_->config.kv_dim() % 32 != 0) continue;
    SCOPED_TRACE(std::string("KV ") + std::string(gguf::type_name(kv_type)));
    std::vector<int32_t> free_slots(static_cast<size_t>(pool));
    std::iota(free_slots.begin(), free_slots.end(), 0);
    std::shuffle(free_slots.begin(), free_slots.end(), std::mt19937(7));
    std::vector<BatchSequence> sequences(kSequences);
    for (size_t s = 0; s < kSequences; ++s) {
      sequences[s].ids = tokens;
      std::rotate(sequences[s].ids.begin(), sequences[s].ids.begin() + 3 * s,
                  sequences[s].ids.end());
      sequences[s].slots.assign(free_slots.begin() + static_cast<int64_t>(s) * longest,
                                free_slots.begin() + static_cast<int64_t>(s + 1) * longest);
    }
    auto cpu_cache = model::create_paged_kv_cache(cpu_->config, *cpu_->backend, kv_type, pool);
    auto vk_cache = model::create_paged_kv_cache(vk_->config, *vk_->backend, kv_type, pool);
    std::vector<model::PagedKvCache> alone_caches;
    for (size_t s = 0; s < kSequences; ++s) {
      alone_caches.push_back(
          model::create_paged_kv_cache(vk_->config, *vk_->backend, kv_type, pool));
    }

    for (size_t step = 0; step < steps.size(); ++step) {
      std::vector<model::SequenceStep> batch;
      for (const StepPart& part : steps[step]) {
        BatchSequence& seq = sequences[part.sequence];
        batch.push_back({std::span(seq.ids).subspan(static_cast<size_t>(seq.done),
                                                    static_cast<size_t>(part.count)),
                         seq.done, seq.slots, part.logits});
      }
      const auto expected = cpu_->transformer->forward_batch(batch, cpu_cache);
      const auto actual = vk_->transformer->forward_batch(batch, vk_cache);
      EXPECT_EQ(vk_backend_->last_step_timings().submits, 1u) << "step " << step;
      ASSERT_EQ(actual.size(), expected.size());
      const float vs_cpu = max_abs_difference(actual, expected);
      // An F16 cache rounds each key and value to 11 bits: where the two backends' float32 sums
      // differ in the last bit, a cached element can round the other way (a 2^-11 relative
      // step) and move a logit by a few 1e-3 on these random-weight models. A Q8_0 cache's
      // step is 1/127 of its block's largest value: one element that rounds the other way
      // (seen with Q6_K weights, whose products sum in another order on each backend) moves
      // a logit by up to a few 1e-2. F32 caches hold the backends to 1e-3.
      const float tolerance = kv_type == gguf::GgmlType::F32   ? 1e-3f
                              : kv_type == gguf::GgmlType::F16 ? 1e-2f
                                                               : 5e-2f;
      EXPECT_LT(vs_cpu, tolerance) << "step " << step;

      size_t row = 0;  // of `actual`
      float worst_alone = 0.0f;
      for (size_t i = 0; i < batch.size(); ++i) {
        const auto alone =
            vk_->transformer->forward_batch({&batch[i], 1}, alone_caches[steps[step][i].sequence]);
        ASSERT_LE((row * vocab) + alone.size(), actual.size());
        const float vs_alone =
            max_abs_difference(alone, std::span(actual).subspan(row * vocab, alone.size()));
        EXPECT_LT(vs_alone, 1e-4f) << "step " << step << ", part " << i;
        worst_alone = std::max(worst_alone, vs_alone);
        row += alone.size() / vocab;
      }
      EXPECT_EQ(row * vocab, actual.size());
      std::cout << GetParam() << " KV " << gguf::type_name(kv_type) << " step " << step
                << ": max |batched vulkan - cpu| = " << vs_cpu
                << ", max |batched - alone| (vulkan) = " << worst_alone << "\n";
      for (const StepPart& part : steps[step]) sequences[part.sequence].done += part.count;
    }
  }
}

// The attention weights the Vulkan kernels used, captured, against PyTorch's probabilities
// (the F32 models: every layer and head of the golden prompt), with and without KV rounding.
class VulkanAttentionCapture : public VulkanModel {};

TEST_P(VulkanAttentionCapture, MatchesPyTorch) {
  const auto golden = testing_support::read_attention_golden(kModels, GetParam());
  const float worst = testing_support::expect_attention_matches_golden(*vk_, golden, 1e-5f);
  std::cout << GetParam() << ": max |vulkan captured - pytorch| = " << worst << "\n";
  for (const gguf::GgmlType kv : {gguf::GgmlType::F16, gguf::GgmlType::Q8_0}) {
    vk_->transformer->set_kv_type(kv);
    testing_support::expect_attention_matches_golden(*vk_, golden, 5e-4f);
  }
}

INSTANTIATE_TEST_SUITE_P(F32Goldens, VulkanAttentionCapture,
                         testing::Values("llama-f32", "gpt2-f32"), [](const auto& param_info) {
                           std::string name = param_info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

INSTANTIATE_TEST_SUITE_P(AllTypes, VulkanModel,
                         testing::ValuesIn(testing_support::test_model_names()),
                         [](const auto& param_info) {
                           return testing_support::test_model_param_name(param_info.param);
                         });

INSTANTIATE_TEST_SUITE_P(SplitBindings, VulkanModel,
                         testing::Values("llama-q4_0:split", "gpt2-f16:split"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           std::replace(name.begin(), name.end(), ':', '_');
                           return name;
                         });

}  // namespace
}  // namespace servescope
