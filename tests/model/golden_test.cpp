// The engine against PyTorch: tools/golden/make_models.py wrote small random-weight models of
// both architectures in every weight type, with float64 reference logits (computed from the
// dequantised weights the file holds) at every prompt position and a greedy continuation.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/model/model.h"
#include "engine/serving/generator.h"

namespace servescope {
namespace {

struct Golden {
  std::vector<int32_t> prompt_ids;
  std::vector<std::vector<float>> logits;  // per prompt position
  std::vector<int32_t> greedy_ids;
};

const std::string kModels = std::string(SERVESCOPE_TEST_DATA_DIR) + "/models/";

Golden read_golden(const std::string& name) {
  std::ifstream in(kModels + name + ".json");
  const auto doc = nlohmann::json::parse(in);
  return {doc["prompt_ids"].get<std::vector<int32_t>>(),
          doc["logits"].get<std::vector<std::vector<float>>>(),
          doc["greedy_ids"].get<std::vector<int32_t>>()};
}

std::unique_ptr<model::Model> load(const std::string& name) {
  return model::load_model(kModels + name + ".gguf", compute::BackendKind::kCpu);
}

float max_abs_difference(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  float worst = 0.0f;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    worst = std::max(worst, std::abs(a[i] - b[i]));
  }
  return worst;
}

class GoldenModel : public testing::TestWithParam<std::string> {};

TEST_P(GoldenModel, LogitsMatchPyTorchAtEveryPosition) {
  const Golden golden = read_golden(GetParam());
  auto m = load(GetParam());
  auto cache = model::create_kv_cache(m->config, *m->backend, m->config.context_length);
  const std::vector<float> logits = m->transformer->forward(golden.prompt_ids, cache, true);
  const auto vocab = static_cast<size_t>(m->config.vocab_size);
  ASSERT_EQ(logits.size(), golden.logits.size() * vocab);
  for (size_t pos = 0; pos < golden.logits.size(); ++pos) {
    EXPECT_LT(max_abs_difference({logits.data() + pos * vocab, vocab}, golden.logits[pos]), 1e-3f)
        << "position " << pos;
  }
}

TEST_P(GoldenModel, GreedyContinuationMatchesPyTorch) {
  const Golden golden = read_golden(GetParam());
  auto m = load(GetParam());
  serving::EngineRequest request;
  request.prompt_ids = golden.prompt_ids;
  request.max_tokens = static_cast<int64_t>(golden.greedy_ids.size());
  const auto result = serving::generate(*m->transformer, request);
  EXPECT_EQ(result.generated_ids, golden.greedy_ids);
  EXPECT_EQ(result.decode_steps, request.max_tokens - 1);
}

// Decoding token by token with the KV cache gives the logits of recomputing every position
// from scratch without one.
TEST_P(GoldenModel, CachedDecodingEqualsRecomputing) {
  const Golden golden = read_golden(GetParam());
  auto m = load(GetParam());
  std::vector<int32_t> sequence = golden.prompt_ids;
  sequence.insert(sequence.end(), golden.greedy_ids.begin(), golden.greedy_ids.end());
  const auto vocab = static_cast<size_t>(m->config.vocab_size);

  auto scratch = model::create_kv_cache(m->config, *m->backend, m->config.context_length);
  const std::vector<float> recomputed = m->transformer->forward(sequence, scratch, true);

  auto cache = model::create_kv_cache(m->config, *m->backend, m->config.context_length);
  const size_t prompt = golden.prompt_ids.size();
  std::vector<float> step =
      m->transformer->forward(std::span(sequence).first(prompt), cache);  // prefill, last position
  for (size_t pos = prompt - 1; pos + 1 < sequence.size(); ++pos) {
    EXPECT_LT(max_abs_difference(step, {recomputed.data() + pos * vocab, vocab}), 1e-4f)
        << "position " << pos;
    step = m->transformer->forward(std::span(sequence).subspan(pos + 1, 1), cache);
  }
  EXPECT_EQ(cache.length, static_cast<int64_t>(sequence.size()));
}

// A prompt prefilled in uneven chunks ends where prefilling it at once does.
TEST_P(GoldenModel, ChunkedPrefillEqualsOneShot) {
  const Golden golden = read_golden(GetParam());
  auto m = load(GetParam());
  auto whole = model::create_kv_cache(m->config, *m->backend, m->config.context_length);
  const std::vector<float> expected = m->transformer->forward(golden.prompt_ids, whole);
  auto chunked = model::create_kv_cache(m->config, *m->backend, m->config.context_length);
  const std::span ids(golden.prompt_ids);
  m->transformer->forward(ids.first(5), chunked);
  m->transformer->forward(ids.subspan(5, 1), chunked);
  const std::vector<float> last = m->transformer->forward(ids.subspan(6), chunked);
  EXPECT_LT(max_abs_difference(last, expected), 1e-4f);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GoldenModel,
                         testing::Values("llama-f32", "llama-f16", "llama-q8_0", "llama-q4_0",
                                         "llama-tied-f32", "gpt2-f32", "gpt2-f16", "gpt2-q8_0",
                                         "gpt2-q4_0", "llama-q4_1", "llama-q5_0", "llama-q5_1",
                                         "llama-bf16", "llama-q2_k", "llama-q3_k", "llama-q4_k",
                                         "llama-q5_k", "llama-q6_k"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace servescope
