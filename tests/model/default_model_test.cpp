// The bundled model (assets/models) against the trainer's own PyTorch forward on the exported
// weights (tests/data/default_model/golden.json, made by tools/train/make_golden.py).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/model/model.h"
#include "engine/serving/generator.h"

namespace servescope {
namespace {

const std::string kGolden = std::string(SERVESCOPE_TEST_DATA_DIR) + "/default_model/golden.json";
const std::string kModel = std::string(SERVESCOPE_TEST_DATA_DIR) + "/../../assets/models/";

class DefaultModel : public testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kGolden)) GTEST_SKIP() << "no golden data for a bundled model";
    std::ifstream in(kGolden);
    golden_ = nlohmann::json::parse(in);
    model_ = model::load_model(kModel + golden_["model"].get<std::string>(),
                               compute::BackendKind::kCpu);
  }

  nlohmann::json golden_;
  std::unique_ptr<model::Model> model_;
};

TEST_F(DefaultModel, TokenizerMatchesSentencePiece) {
  for (const auto& c : golden_["cases"]) {
    EXPECT_EQ(model_->require_tokenizer().encode_with_bos(c["prompt"].get<std::string>()),
              c["prompt_ids"].get<std::vector<int32_t>>());
  }
}

TEST_F(DefaultModel, LogitsMatchPyTorchAtEveryPosition) {
  for (const auto& c : golden_["cases"]) {
    const auto ids = c["prompt_ids"].get<std::vector<int32_t>>();
    const auto expected = c["logits"].get<std::vector<std::vector<float>>>();
    auto cache = model::create_kv_cache(model_->config, *model_->backend,
                                        static_cast<int64_t>(ids.size()));
    const std::vector<float> logits = model_->transformer->forward(ids, cache, true);
    const auto vocab = static_cast<size_t>(model_->config.vocab_size);
    ASSERT_EQ(logits.size(), expected.size() * vocab);
    for (size_t pos = 0; pos < expected.size(); ++pos) {
      float worst = 0.0f;
      for (size_t i = 0; i < vocab; ++i) {
        worst = std::max(worst, std::abs(logits[pos * vocab + i] - expected[pos][i]));
      }
      EXPECT_LT(worst, 1e-3f) << c["prompt"] << " position " << pos;
    }
  }
}

TEST_F(DefaultModel, GreedyContinuationMatchesPyTorch) {
  for (const auto& c : golden_["cases"]) {
    serving::EngineRequest request;
    request.prompt_ids = c["prompt_ids"].get<std::vector<int32_t>>();
    request.max_tokens = static_cast<int64_t>(c["greedy_ids"].size());
    EXPECT_EQ(serving::generate(*model_->transformer, request).generated_ids,
              c["greedy_ids"].get<std::vector<int32_t>>())
        << c["prompt"];
  }
}

}  // namespace
}  // namespace servescope
