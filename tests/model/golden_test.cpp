// The engine against PyTorch: tools/golden/make_models.py wrote small random-weight models of
// every architecture (llama and gpt2 in every weight type), with float64 reference logits (computed
// from the dequantised weights the file holds) at every prompt position and a greedy continuation.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/model.h"
#include "engine/serving/generator.h"
#include "tests/support/test_models.h"

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

// A copy of gemma2-f32 with the metadata keys `keep` accepts (all by default), then `edit`'s;
// returns its path.
std::string gemma2_copy(const std::function<void(gguf::GgufWriter&)>& edit,
                        const std::function<bool(const std::string&)>& keep = {}) {
  const auto source = gguf::GgufFile::open(kModels + "gemma2-f32.gguf");
  gguf::GgufWriter writer(source.version());
  for (const auto& [key, value] : source.metadata()) {
    if (!keep || keep(key)) writer.set(key, value);
  }
  edit(writer);
  for (const gguf::TensorInfo& t : source.tensors()) {
    writer.add_tensor(t.name, t.type, t.shape, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  }
  const std::string test = testing::UnitTest::GetInstance()->current_test_info()->name();
  const std::string path = testing::TempDir() + "/golden_" + test + ".gguf";
  writer.write(path);
  return path;
}

// The prompt logits of gemma2-f32 with its metadata changed by `edit`.
std::vector<float> gemma2_logits_with(const std::function<void(gguf::GgufWriter&)>& edit) {
  auto m = model::load_model(gemma2_copy(edit), compute::BackendKind::kCpu);
  auto cache = model::create_kv_cache(m->config, *m->backend, m->config.context_length);
  return m->transformer->forward(read_golden("gemma2-f32").prompt_ids, cache, true);
}

gguf::Value layer_flags(std::initializer_list<bool> local) {
  std::vector<gguf::Value> items;
  for (const bool flag : local) items.push_back(gguf::Value::boolean(flag));
  return gguf::Value::array(gguf::ValueType::kBool, std::move(items));
}

// attention.sliding_window_pattern as one bool per layer (llama.cpp's array form): [local,
// global] is gemma2's own alternation, [global, global] what a window longer than the context
// gives, and [global, local] something else again.
TEST(SlidingWindowPattern, PerLayerFlagsPickTheLocalLayers) {
  const auto pattern = [](std::initializer_list<bool> local) {
    return [local](gguf::GgufWriter& w) {
      w.set("gemma2.attention.sliding_window_pattern", layer_flags(local));
    };
  };
  const std::vector<float> as_stored = gemma2_logits_with([](gguf::GgufWriter&) {});
  const std::vector<float> no_window = gemma2_logits_with(
      [](gguf::GgufWriter& w) { w.set("gemma2.attention.sliding_window", gguf::Value::u32(128)); });
  EXPECT_EQ(gemma2_logits_with(pattern({true, false})), as_stored);
  EXPECT_EQ(gemma2_logits_with(pattern({false, false})), no_window);
  const std::vector<float> swapped = gemma2_logits_with(pattern({false, true}));
  EXPECT_GT(max_abs_difference(swapped, as_stored), 1e-2f);
  EXPECT_GT(max_abs_difference(swapped, no_window), 1e-2f);
  EXPECT_GT(max_abs_difference(as_stored, no_window), 1e-2f);
}

// A gemma2 file without soft-capping keys gets gemma2's own 50 and 30, as llama.cpp gives it.
TEST(Gemma2Defaults, MissingSoftCapsAreGemma2s) {
  const std::string path = gemma2_copy(
      [](gguf::GgufWriter&) {},
      [](const std::string& key) { return key.find("softcapping") == std::string::npos; });
  const model::ModelConfig c = model::read_model_config(gguf::GgufFile::open(path));
  EXPECT_EQ(c.attn_softcap, 50.0f);
  EXPECT_EQ(c.final_softcap, 30.0f);
  const auto stored = gguf::GgufFile::open(kModels + "gemma2-f32.gguf");
  EXPECT_EQ(model::read_model_config(stored).final_softcap, 1.5f);  // as the test model says
}

TEST(SlidingWindowPattern, AWrongLengthIsOneLineNamingTheKey) {
  try {
    gemma2_logits_with([](gguf::GgufWriter& w) {
      w.set("gemma2.attention.sliding_window_pattern", layer_flags({true, false, true}));
    });
    ADD_FAILURE() << "expected a ModelError";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("gemma2.attention.sliding_window_pattern is not "
                                         "supported; supported: a positive integer"),
              std::string::npos)
        << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GoldenModel,
                         testing::ValuesIn(testing_support::test_model_names()),
                         [](const auto& param_info) {
                           return testing_support::test_model_param_name(param_info.param);
                         });

}  // namespace
}  // namespace servescope
