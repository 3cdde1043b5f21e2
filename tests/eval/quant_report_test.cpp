#include "engine/eval/quant_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/eval/quantize_model.h"
#include "engine/eval/variant_model.h"
#include "engine/model/model.h"

namespace servescope::eval {
namespace {

using gguf::GgmlType;

const std::string kData = SERVESCOPE_TEST_DATA_DIR;

VariantReport variant(double mean_kl, double decode_speedup, uint64_t weight_bytes) {
  VariantReport v;
  v.quality.vs_baseline.mean_kl = mean_kl;
  v.decode_speedup = decode_speedup;
  v.weight_bytes = weight_bytes;
  v.memory_bytes = weight_bytes + 100;  // the same KV cache
  return v;
}

TEST(Judge, AcceptsOnlyWhenEveryLimitHolds) {
  QuantReportOptions limits;
  limits.max_kl = 0.05;
  limits.min_speedup = 1.2;
  const VariantReport baseline = variant(0, 1, 1000);
  EXPECT_TRUE(judge(variant(0.01, 1.5, 500), baseline, limits).accepted);
  EXPECT_TRUE(judge(variant(0.05, 1.2, 999), baseline, limits).accepted);  // limits inclusive

  const Verdict too_lossy = judge(variant(0.06, 1.5, 500), baseline, limits);
  EXPECT_FALSE(too_lossy.accepted);
  ASSERT_EQ(too_lossy.reasons.size(), 1u);
  EXPECT_NE(too_lossy.reasons[0].find("--max-kl"), std::string::npos);

  const Verdict everything_wrong = judge(variant(1, 0.5, 1000), baseline, limits);
  EXPECT_EQ(everything_wrong.reasons.size(), 3u);
}

// A KL that is not a number (NaN weights) is never within a limit, nor accepted when the KL
// limit is off.
TEST(Judge, RefusesAVariantWhoseQualityIsNotANumber) {
  const VariantReport baseline = variant(0, 1, 1000);
  const VariantReport nan = variant(std::numeric_limits<double>::quiet_NaN(), 1.5, 500);
  for (const double max_kl : {0.05, std::numeric_limits<double>::infinity()}) {
    QuantReportOptions limits;
    limits.max_kl = max_kl;
    const Verdict v = judge(nan, baseline, limits);
    EXPECT_FALSE(v.accepted);
    ASSERT_FALSE(v.reasons.empty());
    EXPECT_NE(v.reasons[0].find("not a number"), std::string::npos) << v.reasons[0];
    EXPECT_EQ(v.checks[0].limit, "measured");
  }
}

// The rule on constructed reports: each limit that is set gives one check, passed or failed,
// with the measured value and the limit in its reason; a limit left unset is not checked.
TEST(Judge, GivesEveryLimitsOutcomeWithItsReason) {
  QuantReportOptions limits;
  limits.max_kl = 0.05;
  limits.max_tpot_ms = 20.0;
  limits.min_speedup = 1.2;
  const VariantReport baseline = variant(0, 1, 1000);
  VariantReport fast_but_slow_tail = variant(0.01, 1.5, 500);
  fast_but_slow_tail.load.tpot_ms.p50 = 12.0;
  fast_but_slow_tail.load.tpot_ms.p99 = 25.0;  // the p99 is what the limit reads
  const Verdict v = judge(fast_but_slow_tail, baseline, limits);
  EXPECT_FALSE(v.accepted);
  ASSERT_EQ(v.checks.size(), 4u);
  EXPECT_EQ(v.checks[0].limit, "max_kl");
  EXPECT_TRUE(v.checks[0].passed);
  EXPECT_EQ(v.checks[0].reason, "mean KL 0.01 is within --max-kl 0.05");
  EXPECT_EQ(v.checks[1].limit, "max_tpot_ms");
  EXPECT_FALSE(v.checks[1].passed);
  EXPECT_EQ(v.checks[1].reason, "p99 TPOT under the load 25 ms exceeds --max-tpot-ms 20");
  EXPECT_EQ(v.checks[2].limit, "min_speedup");
  EXPECT_TRUE(v.checks[2].passed);
  EXPECT_EQ(v.checks[2].reason, "decode speed-up 1.5x meets --min-speedup 1.2");
  EXPECT_EQ(v.checks[3].limit, "memory");
  EXPECT_TRUE(v.checks[3].passed);
  EXPECT_EQ(v.reasons, (std::vector<std::string>{v.checks[1].reason}));

  fast_but_slow_tail.load.tpot_ms.p99 = 20.0;  // limits are inclusive
  EXPECT_TRUE(judge(fast_but_slow_tail, baseline, limits).accepted);

  const Verdict only_memory = judge(variant(9, 0.1, 500), baseline, QuantReportOptions{});
  ASSERT_EQ(only_memory.checks.size(), 1u);  // no limits given: only the memory rule
  EXPECT_EQ(only_memory.checks[0].limit, "memory");
  EXPECT_TRUE(only_memory.accepted);
}

QuantReportOptions golden_text_options() {
  std::ifstream in(kData + "/quant/perplexity.json");
  const nlohmann::json all = nlohmann::json::parse(in);
  QuantReportOptions options;
  options.text_ids = all["cases"][0]["text_ids"].get<std::vector<int32_t>>();  // llama
  options.bos_id = 1;
  options.types = {{GgmlType::F32}, {GgmlType::Q8_0}, {GgmlType::Q4_0}};
  options.greedy_tokens = 12;
  options.timing_repeats = 1;
  options.timing_decode_tokens = 4;
  options.load_repeats = 1;
  return options;
}

TEST(QuantReport, OnTheLlamaTestModel) {
  const auto source = gguf::GgufFile::open(kData + "/models/llama-f32.gguf");
  const QuantReport report = run_quant_report(source, golden_text_options());
  EXPECT_EQ(report.positions, 300);
  EXPECT_EQ(report.text_positions, 300);
  EXPECT_EQ(report.baseline.weight_bytes, model::summarize_weights(source).bytes);
  ASSERT_EQ(report.variants.size(), 3u);
  const VariantReport& f32 = report.variants[0];
  const VariantReport& q8 = report.variants[1];
  const VariantReport& q4 = report.variants[2];
  EXPECT_EQ(f32.quality.vs_baseline.mean_kl, 0.0);
  EXPECT_EQ(f32.greedy_identical_tokens, 12);
  EXPECT_EQ(f32.quality.perplexity, report.baseline.quality.perplexity);
  EXPECT_LT(q8.quality.vs_baseline.mean_kl, q4.quality.vs_baseline.mean_kl);
  EXPECT_GT(q8.quality.vs_baseline.top1_agreement, q4.quality.vs_baseline.top1_agreement);
  // Weight bytes are those of the Python-quantised files.
  for (const auto& [v, file] :
       {std::pair{&q8, "llama-q8_0.gguf"}, std::pair{&q4, "llama-q4_0.gguf"}}) {
    EXPECT_EQ(v->weight_bytes,
              model::summarize_weights(gguf::GgufFile::open(kData + "/models/" + file)).bytes);
    EXPECT_LT(v->weight_bytes_ratio, 1.0);
    EXPECT_GT(v->prefill_tokens_per_s, 0.0);
    EXPECT_GT(v->decode_tokens_per_s, 0.0);
    EXPECT_EQ(v->kv_bytes_per_token, 2u * 2 * 2 * 16 * 4);
    EXPECT_EQ(v->weight_error.size(), 3u);  // blk.0, blk.1, other
  }
  EXPECT_GT(q8.weight_error[0].sqnr_db, q4.weight_error[0].sqnr_db);
  // Every variant, the baseline included, ran the fixed load through the engine.
  for (const VariantReport* v : {&report.baseline, &f32, &q8, &q4}) {
    const QuantReportOptions options = golden_text_options();
    EXPECT_EQ(v->load.requests, options.load_clients) << v->type;
    EXPECT_EQ(v->load.output_tokens, options.load_clients * options.load_output_tokens);
    EXPECT_GT(v->load.tpot_ms.p99, 0.0);
    EXPECT_DOUBLE_EQ(v->cost.device_seconds_per_request,
                     v->load.wall_s / static_cast<double>(options.load_clients));
    EXPECT_FALSE(v->cost.price_per_request.has_value());
  }
}

// Bits per weight from the tensor table of the Python-quantised file: 8 x bytes / elements.
TEST(QuantReport, ReportsBitsPerWeightAndTensorTypes) {
  const auto source = gguf::GgufFile::open(kData + "/models/llama-f32.gguf");
  QuantReportOptions options = golden_text_options();
  options.types = {{GgmlType::Q8_0}};
  options.max_chunks = 1;
  const QuantReport report = run_quant_report(source, options);
  const model::WeightSummary q8 =
      model::summarize_weights(gguf::GgufFile::open(kData + "/models/llama-q8_0.gguf"));
  const VariantReport& v = report.variants[0];
  EXPECT_EQ(v.parameters, q8.parameters);
  EXPECT_DOUBLE_EQ(v.bits_per_weight,
                   8.0 * static_cast<double>(q8.bytes) / static_cast<double>(q8.parameters));
  EXPECT_EQ(v.tensor_types, q8.tensor_types);
  EXPECT_DOUBLE_EQ(report.baseline.bits_per_weight, 32.0);
}

// A mixed recipe is a variant like a type: named by its label, its tensors in the types
// quantize_model's recipe gives them.
TEST(QuantReport, ComparesAMixedRecipe) {
  const auto source = gguf::GgufFile::open(kData + "/models/llama-f32.gguf");
  QuantReportOptions options = golden_text_options();
  options.types = {parse_quantize_scheme("q4_k_m")};
  options.max_chunks = 1;
  const QuantReport report = run_quant_report(source, options);
  ASSERT_EQ(report.variants.size(), 1u);
  const VariantReport& v = report.variants[0];
  EXPECT_EQ(v.type, "q4_k_m");
  std::map<std::string, int64_t> expected;
  for (const GgmlType t : tensor_types(source, parse_quantize_scheme("q4_k_m"))) {
    ++expected[std::string(gguf::type_name(t))];
  }
  EXPECT_EQ(v.tensor_types, expected);
  EXPECT_LT(v.bits_per_weight, 8.0);
  const std::vector<QuantizeScheme> schemes = quantisation_schemes();
  EXPECT_NE(std::find_if(schemes.begin(), schemes.end(),
                         [](const QuantizeScheme& s) { return scheme_label(s) == "q4_k_m"; }),
            schemes.end());
}

// Progress counts up to its total, stage by stage; a cancel flag set while the run is under
// way stops it with ReportCancelled at the next work item.
TEST(QuantReport, StreamsProgressAndStopsWhenCancelled) {
  const auto source = gguf::GgufFile::open(kData + "/models/llama-f32.gguf");
  QuantReportOptions options = golden_text_options();
  options.types = {{GgmlType::Q4_0}};
  options.max_chunks = 1;
  std::vector<ReportProgress> seen;
  options.on_stage = [&](const ReportProgress& p) { seen.push_back(p); };
  run_quant_report(source, options);
  ASSERT_FALSE(seen.empty());
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i].done, seen[i - 1].done);
  EXPECT_EQ(seen.back().done, seen.back().total);
  EXPECT_EQ(seen.front().stage, "quality of f32");
  EXPECT_NE(std::find_if(seen.begin(), seen.end(),
                         [](const ReportProgress& p) { return p.stage == "quantising to q4_0"; }),
            seen.end());

  std::atomic<bool> cancel{false};
  options.cancel = &cancel;
  int64_t items_after_cancel = 0;
  options.on_stage = [&](const ReportProgress& p) {
    if (cancel) ++items_after_cancel;
    if (p.stage == "quantising to q4_0") cancel = true;
  };
  EXPECT_THROW(run_quant_report(source, options), ReportCancelled);
  EXPECT_EQ(items_after_cancel, 0);
}

// Every target is one quantize_model writes (F32 first); the loaded-only types are not.
TEST(QuantReport, OffersTheTypesQuantizeModelWrites) {
  const std::vector<GgmlType> targets = quantisation_targets();
  ASSERT_FALSE(targets.empty());
  EXPECT_EQ(targets.front(), GgmlType::F32);
  for (const GgmlType type : {GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0}) {
    EXPECT_NE(std::find(targets.begin(), targets.end(), type), targets.end());
  }
  for (const GgmlType type : targets) {
    EXPECT_EQ(parse_weight_type(weight_type_label(type)), type);
  }
}

TEST(QuantReport, CutsALongTextToTheMemoryBudget) {
  const auto source = gguf::GgufFile::open(kData + "/models/llama-f32.gguf");
  QuantReportOptions options = golden_text_options();
  options.types = {{GgmlType::Q8_0}};
  options.max_baseline_bytes = 200 * 512 * sizeof(float);  // room for one 127-position chunk
  const QuantReport report = run_quant_report(source, options);
  EXPECT_EQ(report.positions, 127);
  EXPECT_EQ(report.text_positions, 300);
}

// A property of a real trained model: Q8_0 changes its next-token distributions
// less than Q4_0. Skipped where the bundled model has not been built.
TEST(QuantReport, Q8_0HasLowerKlThanQ4_0OnTheDefaultModel) {
  const std::string path = kData + "/../../assets/models/servescope-stories.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is not there";
  const auto source = gguf::GgufFile::open(path);
  const auto m = model::load_model(path, compute::BackendKind::kCpu);
  std::ifstream in(kData + "/../../assets/eval/stories.txt");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  QuantReportOptions options;
  options.text_ids = m->require_tokenizer().encode(text);
  options.bos_id = m->require_tokenizer().vocabulary().bos_id;
  options.types = {{GgmlType::Q8_0}, {GgmlType::Q4_0}};
  options.max_chunks = 4;
  options.timing_repeats = 1;
  const QuantReport report = run_quant_report(source, options);
  EXPECT_LT(report.variants[0].quality.vs_baseline.mean_kl,
            report.variants[1].quality.vs_baseline.mean_kl);
  EXPECT_LT(report.variants[0].quality.vs_baseline.mean_kl, 0.05);
}

}  // namespace
}  // namespace servescope::eval
