// Attention weights captured from the CPU backend against the PyTorch probabilities of the
// golden test models (both architectures, every layer and head), and the capture's contract:
// opt-in, a choice of layer and head, no effect on the logits.
#include <gtest/gtest.h>

#include <numeric>

#include "engine/core/error.h"
#include "engine/model/model.h"
#include "tests/support/attention_golden.h"

namespace servescope {
namespace {

const std::string kModels = std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/";

std::unique_ptr<model::Model> load_cpu(const std::string& name) {
  return model::load_model(kModels + name + ".gguf", compute::BackendKind::kCpu);
}

class AttentionCapture : public testing::TestWithParam<std::string> {};

TEST_P(AttentionCapture, EveryLayerAndHeadMatchesPyTorch) {
  const auto golden = testing_support::read_attention_golden(kModels, GetParam());
  auto m = load_cpu(GetParam());
  const float worst = testing_support::expect_attention_matches_golden(*m, golden, 1e-5f);
  std::cout << "[ info ] " << GetParam() << " cpu: largest |captured - pytorch| = " << worst
            << "\n";
}

// F16 and Q8_0 caches round keys and values: the captured weights are those of the rounded
// keys, as PyTorch computes them from keys and values rounded by GGML's encoders (to 5e-4: a
// float32 key can round to the other neighbour than PyTorch's float64 key).
TEST_P(AttentionCapture, RoundedKvTypesMatchPyTorchOnRoundedKeys) {
  const auto golden = testing_support::read_attention_golden(kModels, GetParam());
  auto m = load_cpu(GetParam());
  for (const gguf::GgmlType kv : {gguf::GgmlType::F16, gguf::GgmlType::Q8_0}) {
    m->transformer->set_kv_type(kv);
    const float worst = testing_support::expect_attention_matches_golden(*m, golden, 5e-4f);
    std::cout << "[ info ] " << GetParam() << " cpu KV " << gguf::type_name(kv)
              << ": largest |captured - pytorch| = " << worst << "\n";
  }
}

TEST_P(AttentionCapture, OneLayerAndHeadAndNoEffectOnLogits) {
  const auto golden = testing_support::read_attention_golden(kModels, GetParam());
  auto m = load_cpu(GetParam());
  auto run = [&] {
    model::KvCache cache = m->transformer->new_cache(m->config.context_length);
    return m->transformer->forward(golden.prompt_ids, cache, true);
  };
  const std::vector<float> plain = run();
  EXPECT_TRUE(m->transformer->captured_attention().empty()) << "capture is opt-in";

  m->transformer->set_attention_capture(model::AttentionCapture{1, 2});
  EXPECT_EQ(run(), plain);
  const auto& captured = m->transformer->captured_attention();
  ASSERT_EQ(captured.size(), 1u);
  EXPECT_EQ(captured[0].layer, 1);
  EXPECT_EQ(captured[0].head, 2);
  ASSERT_EQ(captured[0].rows.size(), golden.prompt_ids.size());
  for (size_t i = 0; i < captured[0].rows.size(); ++i) {
    for (size_t t = 0; t <= i; ++t)
      EXPECT_NEAR(captured[0].rows[i][t], golden.kv_types.at(gguf::GgmlType::F32)[1][2][i][t],
                  1e-5f);
  }

  // A decode step captures one row: the new position over the whole sequence.
  model::KvCache cache = m->transformer->new_cache(m->config.context_length);
  m->transformer->forward(golden.prompt_ids, cache);
  m->transformer->forward(std::vector<int32_t>{golden.prompt_ids[1]}, cache);
  ASSERT_EQ(m->transformer->captured_attention().size(), 1u);
  const auto& step = m->transformer->captured_attention()[0];
  ASSERT_EQ(step.rows.size(), 1u);
  EXPECT_EQ(step.positions[0], static_cast<int32_t>(golden.prompt_ids.size()));
  EXPECT_EQ(step.rows[0].size(), golden.prompt_ids.size() + 1);

  m->transformer->set_attention_capture(std::nullopt);
  run();
  EXPECT_TRUE(m->transformer->captured_attention().empty());
}

// In a ragged batch each row says which sequence it belongs to, and holds what that sequence
// alone would give (to float32 rounding: the batch takes other matrix-product paths).
TEST_P(AttentionCapture, BatchRowsNameTheirSequence) {
  const auto golden = testing_support::read_attention_golden(kModels, GetParam());
  auto m = load_cpu(GetParam());
  const std::vector<int32_t>& a = golden.prompt_ids;
  const std::vector<int32_t> b(a.rbegin(), a.rbegin() + 5);
  m->transformer->set_attention_capture(model::AttentionCapture{1, -1});
  auto alone = [&](const std::vector<int32_t>& ids) {
    model::KvCache cache = m->transformer->new_cache(m->config.context_length);
    m->transformer->forward(ids, cache);
    return m->transformer->captured_attention();
  };
  const auto a_alone = alone(a);
  const auto b_alone = alone(b);

  model::PagedKvCache cache =
      model::create_paged_kv_cache(m->config, *m->backend, gguf::GgmlType::F32, 64);
  std::vector<int32_t> a_slots(a.size()), b_slots(b.size());
  std::iota(a_slots.begin(), a_slots.end(), 20);  // anywhere in the pool, apart
  std::iota(b_slots.begin(), b_slots.end(), 3);
  const model::SequenceStep steps[] = {{a, 0, a_slots}, {b, 0, b_slots}};
  m->transformer->forward_batch(steps, cache);
  const auto& batched = m->transformer->captured_attention();
  ASSERT_EQ(batched.size(), static_cast<size_t>(m->config.n_heads));
  for (const model::AttentionWeights& w : batched) {
    ASSERT_EQ(w.rows.size(), a.size() + b.size());
    for (size_t i = 0; i < w.rows.size(); ++i) {
      const bool first = i < a.size();
      EXPECT_EQ(w.sequences[i], first ? 0 : 1);
      const auto& expected = (first ? a_alone : b_alone)[static_cast<size_t>(w.head)];
      const size_t row = first ? i : i - a.size();
      EXPECT_EQ(w.positions[i], static_cast<int32_t>(row));
      ASSERT_EQ(w.rows[i].size(), expected.rows[row].size());
      for (size_t t = 0; t < w.rows[i].size(); ++t) {
        EXPECT_NEAR(w.rows[i][t], expected.rows[row][t], 1e-5f);
      }
    }
  }
}

TEST_P(AttentionCapture, RefusesLayersAndHeadsOutsideTheModel) {
  auto m = load_cpu(GetParam());
  EXPECT_THROW(m->transformer->set_attention_capture(model::AttentionCapture{2, 0}), InputError);
  EXPECT_THROW(m->transformer->set_attention_capture(model::AttentionCapture{0, 4}), InputError);
  EXPECT_THROW(m->transformer->set_attention_capture(model::AttentionCapture{-2, 0}), InputError);
}

INSTANTIATE_TEST_SUITE_P(GoldenModels, AttentionCapture, testing::Values("llama-f32", "gpt2-f32"));

}  // namespace
}  // namespace servescope
