// The quantisation panel against the engine: the block picture's numbers are those of the
// engine's own encoding of the model's weights (read back through GGML's block structs), and
// the variant table shows quant-report's measured latency, cost and verdict.
#include <gtest/gtest.h>

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QTemporaryDir>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/gui/panels/panel_adapter.h"
#include "app/gui/panels/quant_block.h"
#include "app/gui/engine_bridge/quant_lab.h"
#include "engine/eval/quant_report.h"
#include "engine/model/model.h"
#include "tests/support/gguf_copy.h"
#include "tests/app/gui_test_support.h"
#include "widgets/chart_painting.h"
#include "widgets/quant_block_view.h"
#include "widgets/quant_variant_model.h"
#include "widgets/quantisation_panel.h"

namespace servescope::gui {
namespace {

using gguf::GgmlType;

// The stored fp16 d (and m) of a block, read through the engine's struct of its type.
struct StoredScales {
  uint16_t d = 0;
  std::optional<uint16_t> m;
};

template <typename Block>
Block as_block(const std::vector<uint8_t>& bytes) {
  Block block;
  EXPECT_EQ(bytes.size(), sizeof block);
  std::memcpy(&block, bytes.data(), sizeof block);
  return block;
}

StoredScales stored_scales(GgmlType type, const std::vector<uint8_t>& bytes) {
  switch (type) {
    case GgmlType::Q8_0:
      return {as_block<gguf::BlockQ8_0>(bytes).d, std::nullopt};
    case GgmlType::Q4_0:
      return {as_block<gguf::BlockQ4_0>(bytes).d, std::nullopt};
    case GgmlType::Q4_1:
      return {as_block<gguf::BlockQ4_1>(bytes).d, as_block<gguf::BlockQ4_1>(bytes).m};
    case GgmlType::Q5_0:
      return {as_block<gguf::BlockQ5_0>(bytes).d, std::nullopt};
    case GgmlType::Q5_1:
      return {as_block<gguf::BlockQ5_1>(bytes).d, as_block<gguf::BlockQ5_1>(bytes).m};
    case GgmlType::Q2_K:
      return {as_block<gguf::BlockQ2_K>(bytes).d, as_block<gguf::BlockQ2_K>(bytes).dmin};
    case GgmlType::Q3_K:
      return {as_block<gguf::BlockQ3_K>(bytes).d, std::nullopt};
    case GgmlType::Q4_K:
      return {as_block<gguf::BlockQ4_K>(bytes).d, as_block<gguf::BlockQ4_K>(bytes).dmin};
    case GgmlType::Q5_K:
      return {as_block<gguf::BlockQ5_K>(bytes).d, as_block<gguf::BlockQ5_K>(bytes).dmin};
    case GgmlType::Q6_K:
      return {as_block<gguf::BlockQ6_K>(bytes).d, std::nullopt};
    default:
      ADD_FAILURE() << "no struct for " << gguf::type_name(type);
      return {};
  }
}

constexpr GgmlType kKQuants[] = {GgmlType::Q6_K, GgmlType::Q5_K, GgmlType::Q4_K, GgmlType::Q3_K,
                                 GgmlType::Q2_K};

GgmlType type_of(const widgets::QuantBlockSnapshot& b) {
  for (const GgmlType t :
       {GgmlType::Q8_0, GgmlType::Q5_1, GgmlType::Q5_0, GgmlType::Q4_1, GgmlType::Q4_0,
        GgmlType::Q6_K, GgmlType::Q5_K, GgmlType::Q4_K, GgmlType::Q3_K, GgmlType::Q2_K}) {
    if (b.type == QString::fromLatin1(gguf::type_name(t)).toLower()) return t;
  }
  return GgmlType::F32;
}

// The engine's encoding of the same values, outside quant_block(): row 0 of the tensor, first
// block, quantised and decoded by the engine.
struct EngineBlock {
  std::vector<float> originals;
  std::vector<uint8_t> bytes;
  std::vector<float> decoded;
};

EngineBlock engine_block(const gguf::GgufFile& file, const std::string& tensor_name,
                         GgmlType type) {
  const gguf::TensorInfo* tensor = file.find_tensor(tensor_name);
  EngineBlock e;
  if (tensor == nullptr) return e;
  std::vector<float> row(static_cast<size_t>(tensor->shape[0]));
  gguf::dequantize_row(tensor->type, tensor->data, row.data(), tensor->shape[0]);
  const int64_t n = gguf::block_elements(type);
  e.originals.assign(row.begin(), row.begin() + n);
  e.bytes.resize(static_cast<size_t>(gguf::block_bytes(type)));
  gguf::quantize_row(type, e.originals.data(), e.bytes.data(), n);
  e.decoded.resize(static_cast<size_t>(n));
  gguf::dequantize_row(type, e.bytes.data(), e.decoded.data(), n);
  return e;
}

TEST(QuantBlockPicture, EveryNumberIsTheEnginesEncodingOfTheModel) {
  const auto file = gguf::GgufFile::open(cli::default_model_path());
  const std::vector<widgets::QuantBlockSnapshot> blocks = quant_blocks(file);
  ASSERT_GE(blocks.size(), 5u);  // Q8_0, Q5_1, Q5_0, Q4_1, Q4_0 at least
  for (const widgets::QuantBlockSnapshot& b : blocks) {
    SCOPED_TRACE(b.type.toStdString());
    const GgmlType type = type_of(b);
    if (!b.sub_blocks.empty()) continue;  // the K-quants have their own test
    EXPECT_EQ(b.tensor, "blk.0.ffn_down.weight");
    const EngineBlock e = engine_block(file, b.tensor.toStdString(), type);
    ASSERT_EQ(b.originals.size(), e.originals.size());
    EXPECT_EQ(b.block_bytes, static_cast<int>(e.bytes.size()));
    const StoredScales stored = stored_scales(type, e.bytes);
    EXPECT_EQ(b.d_bits, stored.d);
    EXPECT_EQ(b.d, gguf::fp16_to_fp32(stored.d));
    EXPECT_EQ(b.has_min, stored.m.has_value());
    if (stored.m) {
      EXPECT_EQ(b.m, gguf::fp16_to_fp32(*stored.m));
    }
    int layout_bytes = 0;
    for (const widgets::QuantByteField& f : b.layout) layout_bytes += f.bytes;
    EXPECT_EQ(layout_bytes, b.block_bytes);
    ASSERT_EQ(b.quants.size(), b.originals.size());
    for (size_t i = 0; i < b.originals.size(); ++i) {
      EXPECT_EQ(b.originals[i], e.originals[i]) << i;
      EXPECT_EQ(b.reconstructed[i], e.decoded[i]) << i;
      // The quant read from the bytes decodes, by the type's formula, to the engine's value.
      EXPECT_GE(b.quants[i], b.quant_min);
      EXPECT_LE(b.quants[i], b.quant_max);
      const float d = gguf::fp16_to_fp32(stored.d);
      const float m = stored.m ? gguf::fp16_to_fp32(*stored.m) : 0.0f;
      EXPECT_EQ(static_cast<float>(b.quants[i]) * d + m, e.decoded[i]) << i;
    }
  }
}

// A K-quant super-block: 256 elements in sub-blocks of 16 or 32, each with its own scale (and
// min) whose stored integer times the super-block's fp16 d (and dmin) decodes the engine's
// values; d and dmin are the engine struct's.
TEST(QuantBlockPicture, KQuantSuperBlocksAreTheEnginesEncoding) {
  const auto file = gguf::GgufFile::open(cli::default_model_path());
  const std::vector<widgets::QuantBlockSnapshot> blocks = quant_blocks(file);
  int k_blocks = 0;
  for (const widgets::QuantBlockSnapshot& b : blocks) {
    const GgmlType type = type_of(b);
    if (std::find(std::begin(kKQuants), std::end(kKQuants), type) == std::end(kKQuants)) continue;
    SCOPED_TRACE(b.type.toStdString());
    ++k_blocks;
    const EngineBlock e = engine_block(file, b.tensor.toStdString(), type);
    ASSERT_EQ(b.originals.size(), 256u);
    ASSERT_EQ(e.originals.size(), 256u);
    const StoredScales stored = stored_scales(type, e.bytes);
    EXPECT_EQ(b.d_bits, stored.d);
    EXPECT_EQ(b.d, gguf::fp16_to_fp32(stored.d));
    EXPECT_EQ(b.has_min, stored.m.has_value());
    if (stored.m) {
      EXPECT_EQ(b.m_bits, *stored.m);
      EXPECT_EQ(b.m, gguf::fp16_to_fp32(*stored.m));
    }
    const size_t sub_size = type == GgmlType::Q4_K || type == GgmlType::Q5_K ? 32 : 16;
    ASSERT_EQ(b.sub_blocks.size(), 256 / sub_size);
    if (type == GgmlType::Q6_K) {  // its scales are plain int8s in the struct
      const auto block = as_block<gguf::BlockQ6_K>(e.bytes);
      for (size_t j = 0; j < 16; ++j) EXPECT_EQ(b.sub_blocks[j].scale_q, block.scales[j]) << j;
    }
    for (size_t j = 0; j < b.sub_blocks.size(); ++j) {
      const widgets::QuantSubBlock& sub = b.sub_blocks[j];
      EXPECT_EQ(sub.first, static_cast<int>(j * sub_size));
      EXPECT_EQ(sub.count, static_cast<int>(sub_size));
      EXPECT_EQ(sub.scale, gguf::fp16_to_fp32(stored.d) * static_cast<float>(sub.scale_q));
      for (int i = sub.first; i < sub.first + sub.count; ++i) {
        const auto at = static_cast<size_t>(i);
        EXPECT_EQ(b.originals[at], e.originals[at]);
        EXPECT_EQ(b.reconstructed[at], e.decoded[at]);
        EXPECT_GE(b.quants[at], b.quant_min);
        EXPECT_LE(b.quants[at], b.quant_max);
        EXPECT_EQ(static_cast<float>(sub.scale) * static_cast<float>(b.quants[at]) -
                      static_cast<float>(sub.min),
                  e.decoded[at])
            << i;
      }
    }
  }
  EXPECT_EQ(k_blocks, 5);
}

// The panel's block tab paints the stored fp16 scale (and min) of the engine's block.
TEST(QuantBlockPicture, ThePanelShowsTheBlocksOwnScale) {
  const auto file = gguf::GgufFile::open(cli::default_model_path());
  widgets::QuantisationSnapshot s;
  s.blocks = quant_blocks(file);
  widgets::QuantisationPanel panel;
  panel.resize(1200, 800);
  panel.set_snapshot(s);
  for (const widgets::QuantBlockSnapshot& b : s.blocks) {
    SCOPED_TRACE(b.type.toStdString());
    const GgmlType type = type_of(b);
    ASSERT_NE(type, GgmlType::F32);
    ASSERT_TRUE(panel.show_block(b.type));
    (void)panel.grab();
    const StoredScales stored =
        stored_scales(type, engine_block(file, b.tensor.toStdString(), type).bytes);
    const QStringList texts = panel.block_view().painted_texts();
    const bool k_quant = !b.sub_blocks.empty();
    EXPECT_TRUE(texts.contains(widgets::QuantBlockView::fp16_text(
        k_quant ? "super-block d" : "d", gguf::fp16_to_fp32(stored.d), stored.d)));
    if (stored.m) {
      EXPECT_TRUE(texts.contains(widgets::QuantBlockView::fp16_text(
          k_quant ? "dmin" : "m", gguf::fp16_to_fp32(*stored.m), *stored.m)));
    }
    for (const widgets::QuantSubBlock& sub : b.sub_blocks) {  // each sub-block's stored scale
      EXPECT_TRUE(texts.contains(QString::number(sub.scale_q))) << sub.first;
    }
  }
}

// The table's latency, cost and verdict are quant-report's own (a report of the tiny test
// model): no figure computed beside it.
TEST(QuantisationAdapter, ShowsQuantReportsLoadAndVerdict) {
  const std::string path = testing::kTestData + "/models/llama-f32.gguf";
  const auto m = model::load_model(path, compute::BackendKind::kCpu);
  std::ifstream in(testing::kTestData + "/quant/perplexity.json");
  const nlohmann::json all = nlohmann::json::parse(in);
  QuantLabReport lab;
  lab.model_path = path;
  lab.complete = true;
  lab.serial = 1;
  lab.options.text_ids = all["cases"][0]["text_ids"].get<std::vector<int32_t>>();
  lab.options.bos_id = 1;
  lab.options.types = {{GgmlType::Q8_0}, {GgmlType::Q4_0}};
  lab.options.max_chunks = 1;
  lab.options.timing_repeats = 1;
  lab.options.timing_decode_tokens = 4;
  lab.options.load_repeats = 1;
  lab.report = eval::run_quant_report(m->file, lab.options);

  TelemetryFolder folder;
  EngineInfo info;
  info.tokenizer = std::shared_ptr<const Tokenizer>(m->tokenizer.release());
  ASSERT_TRUE(info.tokenizer);
  widgets::QuantRunState run;
  const auto adapter = make_quantisation_adapter(nullptr);
  adapter->refresh(
      PanelFeed{folder, info, 0.0, nullptr, &lab, &run, {"q8_0", "q4_0"}, nullptr, {}});
  auto* panel = qobject_cast<widgets::QuantisationPanel*>(adapter->view());
  ASSERT_NE(panel, nullptr);
  const widgets::QuantVariantModel& table = panel->variant_model();
  ASSERT_EQ(table.rowCount(), 3);
  EXPECT_EQ(panel->checked_types(), (QStringList{"q8_0", "q4_0"}));
  const auto cell = [&](int row, int column) { return table.index(row, column).data().toString(); };
  const auto pair = [](const serving::Percentiles& p) {
    return widgets::chart::format_number(p.p50) + " / " + widgets::chart::format_number(p.p99);
  };
  for (int row = 0; row < 3; ++row) {
    const eval::VariantReport& v = row == 0 ? lab.report.baseline : lab.report.variants[row - 1];
    SCOPED_TRACE(v.type);
    EXPECT_EQ(cell(row, widgets::QuantVariantModel::kWeights).toStdString(), v.type);
    EXPECT_EQ(cell(row, widgets::QuantVariantModel::kTtft), pair(v.load.ttft_ms));
    EXPECT_EQ(cell(row, widgets::QuantVariantModel::kTpot), pair(v.load.tpot_ms));
    EXPECT_EQ(cell(row, widgets::QuantVariantModel::kCost),
              widgets::chart::format_number(1000.0 * v.cost.device_seconds_per_request));
    EXPECT_EQ(cell(row, widgets::QuantVariantModel::kBitsPerWeight),
              QString::number(v.bits_per_weight, 'f', 2));
  }
  // Verdicts are eval::judge's under the limits the user sets in the panel.
  const auto check_verdicts = [&](const eval::QuantReportOptions& limits) {
    for (int row = 1; row < 3; ++row) {
      const eval::Verdict expected =
          eval::judge(lab.report.variants[row - 1], lab.report.baseline, limits);
      EXPECT_EQ(table.verdict(row).accepted, expected.accepted) << row;
      EXPECT_EQ(table.verdict(row).reasons.size(), static_cast<qsizetype>(expected.reasons.size()));
    }
  };
  eval::QuantReportOptions limits;
  limits.max_kl = panel->limits().max_kl;
  check_verdicts(limits);
  // A KL limit between the two variants' KL: Q8_0 accepted, Q4_0 rejected.
  const double kl8 = lab.report.variants[0].quality.vs_baseline.mean_kl;
  const double kl4 = lab.report.variants[1].quality.vs_baseline.mean_kl;
  ASSERT_LT(kl8, kl4);
  panel->max_kl_enabled_control()->setChecked(true);
  panel->max_kl_control()->setValue((kl8 + kl4) / 2);
  limits.max_kl = panel->max_kl_control()->value();
  check_verdicts(limits);
  EXPECT_EQ(cell(2, widgets::QuantVariantModel::kVerdict), "reject");

  // A new run (other types chosen): its quick parts arrive first and leave the last
  // comparison on show until the new one is complete, as Cancel's tooltip promises.
  QuantLabReport quick;
  quick.model_path = path;
  quick.serial = 2;
  quick.weight_type = "q8_0";
  QuantLabReport shown = with_last_comparison(quick, lab);
  EXPECT_FALSE(shown.complete);
  EXPECT_EQ(shown.weight_type, "q8_0");  // the quick parts are the new run's
  run.running = true;
  adapter->refresh(PanelFeed{folder, info, 0.0, nullptr, &shown, &run, {"q8_0"}, nullptr, {}});
  ASSERT_EQ(table.rowCount(), 3);
  EXPECT_EQ(cell(2, widgets::QuantVariantModel::kWeights).toStdString(),
            lab.report.variants[1].type);
  // Another model's comparison is never carried over.
  quick.model_path = testing::kTestData + "/models/llama-q8_0.gguf";
  EXPECT_TRUE(with_last_comparison(quick, lab).report.baseline.type.empty());
}

// Issue 25 item 8: NaN weights gave "KL 0, top-1 100%, accepted". A figure that is not a
// number is said to be one, and no variant of such a model is accepted.
TEST(QuantLab, NanWeightsAreReportedAsNotANumberAndNeverAccepted) {
  QTemporaryDir dir;
  const std::string path = dir.filePath("nan.gguf").toStdString();
  testing_support::GgufEdits nan;
  nan.f32_tensor = [](const std::string& tensor, std::vector<float>& weights) {
    if (tensor == "output_norm.weight") {
      std::fill(weights.begin(), weights.end(), std::numeric_limits<float>::quiet_NaN());
    }
  };
  testing_support::write_edited_copy(testing::kTestData + "/models/llama-f32.gguf", path, nan);
  const auto tokenizer = load_tokenizer(gguf::GgufFile::open(path));
  std::string text;
  for (int i = 0; i < 20; ++i) text += "Once upon a time there was a little girl named Lily. ";
  const QuantLabReport lab = run_quant_lab(path, *tokenizer, "Once upon a time", text, {"q8_0"});
  ASSERT_EQ(lab.report.variants.size(), 1u);
  const eval::VariantReport& variant = lab.report.variants.front();
  EXPECT_TRUE(std::isnan(variant.quality.vs_baseline.mean_kl));
  EXPECT_EQ(variant.quality.vs_baseline.top1_agreement, 0.0);
  eval::QuantReportOptions limits;
  limits.max_kl = default_lab_limits().max_kl;
  EXPECT_FALSE(eval::judge(variant, lab.report.baseline, limits).accepted);
  ASSERT_FALSE(lab.problems.empty());
  EXPECT_NE(lab.problems.back().find("not a number"), std::string::npos) << lab.problems.back();
}

}  // namespace
}  // namespace servescope::gui
