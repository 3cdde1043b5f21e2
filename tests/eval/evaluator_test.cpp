// The evaluator against PyTorch: perplexity, KL and top-1 agreement of the test models on a
// token stream, computed by tools/golden/make_quant_golden.py with the float64 reference
// forward (tests/data/quant/perplexity.json).
#include "engine/eval/evaluator.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/eval/quantize_model.h"
#include "engine/eval/variant_model.h"
#include "engine/model/model.h"

namespace servescope::eval {
namespace {

const std::string kData = SERVESCOPE_TEST_DATA_DIR;

nlohmann::json perplexity_case(const std::string& model) {
  std::ifstream in(kData + "/quant/perplexity.json");
  EXPECT_TRUE(in);
  const nlohmann::json all = nlohmann::json::parse(in);
  for (const auto& c : all["cases"]) {
    if (c["model"] == model) return c;
  }
  ADD_FAILURE() << "no case for " << model;
  return {};
}

std::unique_ptr<model::Model> load(const std::string& name) {
  return model::load_model(kData + "/models/" + name, compute::BackendKind::kCpu);
}

std::vector<std::vector<int32_t>> chunks_of(const nlohmann::json& c) {
  return split_into_chunks(c["text_ids"].get<std::vector<int32_t>>(),
                           c["context_length"].get<int64_t>(), c["bos_id"].get<int32_t>());
}

TEST(SplitIntoChunks, BosThenContextMinusOneTextTokens) {
  const std::vector<int32_t> ids(300, 7);
  const auto chunks = split_into_chunks(ids, 128, 1);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].size(), 128u);
  EXPECT_EQ(chunks[1].size(), 128u);
  EXPECT_EQ(chunks[2].size(), 1u + 300 - 2 * 127);
  for (const auto& chunk : chunks) EXPECT_EQ(chunk.front(), 1);
  EXPECT_EQ(scored_positions(chunks), 300);
  EXPECT_EQ(split_into_chunks(ids, 128, 1, 2).size(), 2u);
}

TEST(SplitIntoChunks, WithoutBosTheFirstTokenIsOnlyContext) {
  const std::vector<int32_t> ids(257, 7);
  const auto chunks = split_into_chunks(ids, 128, -1);
  ASSERT_EQ(chunks.size(), 2u);  // a lone leftover token predicts nothing
  EXPECT_EQ(scored_positions(chunks), 254);
}

TEST(SplitIntoChunks, RejectsTooLittle) {
  EXPECT_THROW(split_into_chunks(std::vector<int32_t>{}, 128, 1), InputError);
  EXPECT_THROW(split_into_chunks(std::vector<int32_t>{5}, 128, -1), InputError);
  EXPECT_THROW(split_into_chunks(std::vector<int32_t>{5, 6}, 1, -1), InputError);
}

class EvaluatorVsPyTorch : public testing::TestWithParam<std::string> {};

TEST_P(EvaluatorVsPyTorch, BaselinePerplexityMatches) {
  const nlohmann::json c = perplexity_case(GetParam() + "-f32.gguf");
  const auto baseline = load(GetParam() + "-f32.gguf");
  QualityEvaluator evaluator(chunks_of(c));
  const VariantQuality q = evaluator.run_baseline(*baseline->transformer, "f32");
  EXPECT_EQ(q.positions, c["positions"].get<int64_t>());
  const double expected = c["perplexity"].get<double>();
  EXPECT_NEAR(q.perplexity, expected, 1e-3 * expected);
  EXPECT_EQ(evaluator.score(*baseline->transformer, "f32").perplexity, q.perplexity);
  RecordProperty("perplexity", std::to_string(q.perplexity));
}

TEST_P(EvaluatorVsPyTorch, ModelAgainstItselfHasZeroKlAndFullAgreement) {
  const nlohmann::json c = perplexity_case(GetParam() + "-f32.gguf");
  const auto baseline = load(GetParam() + "-f32.gguf");
  QualityEvaluator evaluator(chunks_of(c));
  const VariantQuality base = evaluator.run_baseline(*baseline->transformer, "f32");
  const VariantQuality same = evaluator.compare(*baseline->transformer, "f32 again");
  EXPECT_EQ(same.vs_baseline.mean_kl, 0.0);
  EXPECT_EQ(same.vs_baseline.max_kl, 0.0);
  EXPECT_EQ(same.vs_baseline.top1_agreement, 1.0);
  EXPECT_EQ(same.perplexity, base.perplexity);
}

TEST_P(EvaluatorVsPyTorch, QuantisedVariantsMatchKlAndAgreement) {
  const nlohmann::json c = perplexity_case(GetParam() + "-f32.gguf");
  const auto baseline = load(GetParam() + "-f32.gguf");
  QualityEvaluator evaluator(chunks_of(c));
  evaluator.run_baseline(*baseline->transformer, "f32");
  double previous_kl = 0.0;
  for (const std::string type : {"q8_0", "q4_0"}) {
    SCOPED_TRACE(type);
    const auto& want = c["variants"][type];
    // Quantised in memory from the F32 file: the same bytes as the Python-written file.
    const auto variant =
        load_quantised_variant(baseline->file, parse_weight_type(type), compute::BackendKind::kCpu);
    const VariantQuality q = evaluator.compare(*variant->transformer, type);
    EXPECT_NEAR(q.perplexity, want["perplexity"].get<double>(), 1e-3 * q.perplexity);
    EXPECT_NEAR(q.vs_baseline.mean_kl, want["mean_kl"].get<double>(),
                1e-4 + 1e-3 * q.vs_baseline.mean_kl);
    EXPECT_NEAR(q.vs_baseline.p99_kl, want["p99_kl"].get<double>(),
                1e-4 + 1e-3 * q.vs_baseline.p99_kl);
    EXPECT_NEAR(q.vs_baseline.top1_agreement, want["top1_agreement"].get<double>(), 0.01);
    RecordProperty(type + "_mean_kl", std::to_string(q.vs_baseline.mean_kl));
    RecordProperty(type + "_top1", std::to_string(q.vs_baseline.top1_agreement));
    EXPECT_GT(q.vs_baseline.mean_kl, previous_kl);  // Q4_0 loses more than Q8_0
    previous_kl = q.vs_baseline.mean_kl;
  }
}

INSTANTIATE_TEST_SUITE_P(TestModels, EvaluatorVsPyTorch, testing::Values("llama", "gpt2"));

TEST(QualityEvaluator, StreamsProgressAfterEveryChunk) {
  const nlohmann::json c = perplexity_case("llama-f32.gguf");
  const auto baseline = load("llama-f32.gguf");
  std::vector<EvalProgress> seen;
  QualityEvaluator evaluator(chunks_of(c), [&](const EvalProgress& p) { seen.push_back(p); });
  const VariantQuality base = evaluator.run_baseline(*baseline->transformer, "f32");
  const auto variant = load("llama-q4_0.gguf");
  const VariantQuality q4 = evaluator.compare(*variant->transformer, "q4_0");
  ASSERT_EQ(seen.size(), 6u);  // 3 chunks, two runs
  EXPECT_EQ(seen[0].variant, "f32");
  EXPECT_EQ(seen[0].positions_done, 127);
  EXPECT_EQ(seen[2].positions_done, seen[2].positions_total);
  EXPECT_EQ(seen[2].perplexity, base.perplexity);
  EXPECT_EQ(seen[3].variant, "q4_0");
  EXPECT_GT(seen[3].vs_baseline.mean_kl, 0.0);
  EXPECT_EQ(seen[5].vs_baseline.mean_kl, q4.vs_baseline.mean_kl);
  EXPECT_EQ(seen[5].positions_total, 300);
}

// A chunk whose logits would not fit one pass runs as passes over one cache (here 6 positions'
// logits per pass): the same logits, within float rounding, as one pass of the whole chunk.
TEST(ChunkLogits, PassesOfAFewPositionsEqualOnePass) {
  const nlohmann::json c = perplexity_case("llama-f32.gguf");
  const auto m = load("llama-f32.gguf");
  const std::vector<int32_t> chunk = chunks_of(c).front();
  const int64_t row_bytes = m->config.vocab_size * static_cast<int64_t>(sizeof(float));
  const std::vector<float> whole = chunk_logits(*m->transformer, chunk);
  const std::vector<float> in_passes = chunk_logits(*m->transformer, chunk, 6 * row_bytes);
  ASSERT_EQ(whole.size(), chunk.size() * static_cast<size_t>(m->config.vocab_size));
  ASSERT_EQ(in_passes.size(), whole.size());
  for (size_t i = 0; i < whole.size(); ++i) ASSERT_NEAR(in_passes[i], whole[i], 1e-4f) << i;
}

TEST(QualityEvaluator, CompareNeedsABaseline) {
  const auto m = load("llama-f32.gguf");
  QualityEvaluator evaluator(split_into_chunks(std::vector<int32_t>{5, 6, 7}, 128, 1));
  EXPECT_THROW(evaluator.compare(*m->transformer, "x"), InputError);
}

TEST(GreedyContinuation, IdenticalForTheSameModel) {
  const auto m = load("llama-f32.gguf");
  const std::vector<int32_t> prompt = {1, 40, 41, 42};
  const auto a = greedy_continuation(*m->transformer, prompt, 16);
  const auto b = greedy_continuation(*m->transformer, prompt, 16);
  ASSERT_EQ(a.size(), 16u);
  EXPECT_EQ(identical_prefix_length(a, b), 16);
}

}  // namespace
}  // namespace servescope::eval
