#include "app/lessons/format.h"

#include <gtest/gtest.h>

#include "app/lessons/placeholders.h"

namespace servescope::lessons {
namespace {

TEST(Format, BytesShowTheExactFigureAndAReadableSize) {
  EXPECT_EQ(format_quantity(272000, "bytes"), "272,000 bytes (265.6 KiB)");
  EXPECT_EQ(format_quantity(1360, "bytes"), "1,360 bytes (1.33 KiB)");
  EXPECT_EQ(format_quantity(512, "bytes"), "512 bytes");
  EXPECT_EQ(format_quantity(1310720, "bytes"), "1,310,720 bytes (1.25 MiB)");
  EXPECT_EQ(format_quantity(18459648, "bytes"), "18,459,648 bytes (17.6 MiB)");
  // decode_kv_bytes_per_step is a mean over steps: shown in whole bytes.
  EXPECT_EQ(format_quantity(2149515.06, "bytes"), "2,149,515 bytes (2.05 MiB)");
  EXPECT_EQ(format_quantity(3.0 * 1024 * 1024 * 1024, "bytes"), "3,221,225,472 bytes (3 GiB)");
}

TEST(Format, OtherUnitsUseThreeSignificantFigures) {
  EXPECT_EQ(format_quantity(1.8459648, "ms"), "1.85 ms");
  EXPECT_EQ(format_quantity(57.34, "GB/s"), "57.3 GB/s");
  EXPECT_EQ(format_quantity(1234.4, "tokens/s"), "1,234 tokens/s");
  EXPECT_EQ(format_quantity(0.01234, "ms"), "0.0123 ms");
  EXPECT_EQ(format_quantity(1.98, "x"), "1.98x");
  EXPECT_EQ(format_quantity(74, "requests"), "74 requests");
  EXPECT_EQ(format_quantity(1024, "tokens"), "1,024 tokens");
  EXPECT_EQ(format_number(-1234567.5, 1), "-1,234,567.5");
  EXPECT_EQ(format_plain(12.5), "12.5");
}

TEST(Placeholders, FindsEachWithItsNamespaceAndLine) {
  const auto refs = find_placeholders("a {{model.layers}}\nb {{ measure.kv_bytes }} {{answer}}");
  ASSERT_EQ(refs.size(), 3u);
  EXPECT_EQ(refs[0].space, "model");
  EXPECT_EQ(refs[0].name, "layers");
  EXPECT_EQ(refs[0].line_offset, 0);
  EXPECT_EQ(refs[1].space, "measure");
  EXPECT_EQ(refs[1].name, "kv_bytes");
  EXPECT_EQ(refs[1].line_offset, 1);
  EXPECT_EQ(refs[2].space, "answer");
  EXPECT_EQ(refs[2].name, "");
}

TEST(Placeholders, FillsModelMeasureParamCalcAndAnswer) {
  ModelFacts model;
  model.config.n_layers = 5;
  model.config.n_kv_heads = 2;
  model.weight_bytes = 18459648;
  model.weight_type = "f32";
  const Measurements measured = {{"kv_bytes", 272000}, {"decode_ms_per_token", 1.5}};
  GeneratedAnswer generated;
  generated.params = {{"tokens", "200"}};
  generated.calc = {{"bytes_per_token", 1360}, {"bandwidth_gbs", 12.34}};
  const FilledText filled = fill_placeholders(
      "{{model.layers}} layers, {{model.weight_bytes}} ({{model.weight_type}}); "
      "{{measure.kv_bytes}} in {{measure.decode_ms_per_token}}; {{param.tokens}} x "
      "{{calc.bytes_per_token}} = {{answer}} at {{calc.bandwidth_gbs}}",
      {&model, &measured, &generated, std::string("272,000 bytes")});
  EXPECT_EQ(filled.text,
            "5 layers, 18,459,648 bytes (17.6 MiB) (f32); 272,000 bytes (265.6 KiB) in 1.5 ms; "
            "200 x 1,360 = 272,000 bytes at 12.3");
  EXPECT_TRUE(filled.missing.empty());
}

// A weight-bytes question is answerable only with the feed-forward width and whether the
// output matrix is the embedding table.
TEST(Placeholders, FillTheFeedForwardWidthAndTheOutputMatrix) {
  ModelFacts model;
  model.config.ffn_dim = 672;
  model.config.tied_output = false;
  FillContext context;
  context.model = &model;
  EXPECT_EQ(fill_placeholders("{{model.ffn_dim}}; {{model.output}}", context).text,
            "672; a separate output matrix of vocabulary x embedding width");
  model.config.tied_output = true;
  EXPECT_EQ(fill_placeholders("{{model.output}}", context).text,
            "no output matrix of its own: the logits reuse the embedding table");
}

TEST(Placeholders, MissingValuesBecomeAQuestionMarkAndAreListed) {
  const FilledText filled = fill_placeholders("{{measure.ttft_ms}} and {{model.nope}}", {});
  EXPECT_EQ(filled.text, "? and ?");
  EXPECT_EQ(filled.missing, (std::vector<std::string>{"{{measure.ttft_ms}}", "{{model.nope}}"}));
}

}  // namespace
}  // namespace servescope::lessons
