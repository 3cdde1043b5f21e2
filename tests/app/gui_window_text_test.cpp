// The status bar's short labels: what they keep, and what their tooltips add.
#include <gtest/gtest.h>

#include <QLocale>
#include <new>
#include <stdexcept>

#include "app/gui/engine_bridge/timing_models.h"
#include "app/gui/window/window_text.h"

namespace servescope::gui {
namespace {

TEST(WindowText, CountsKeepThreeSignificantDigits) {
  // The window writes numbers in the user's locale; these expectations are the C locale's.
  if (QLocale::system().decimalPoint() != QChar('.')) GTEST_SKIP() << "decimal point not '.'";
  EXPECT_EQ(count_text(4'614'912), "4.61 M");
  EXPECT_EQ(count_text(1'100'000'000), "1.10 B");
  EXPECT_EQ(count_text(24'900'000), "24.9 M");
  EXPECT_EQ(count_text(850'000), "850 k");
  EXPECT_EQ(count_text(999), "999");
}

TEST(WindowText, SizesAreWrittenInBinaryUnits) {
  EXPECT_EQ(format_bytes(18'459'648), "17.6 MiB");  // the bundled model's weights, not "17.6 MB"
  EXPECT_EQ(format_bytes(5 * 1024 * 1024), "5 MiB");
  EXPECT_EQ(format_bytes(1023), "1,023 B");
  // The timing model menu: 25M F32 with the bundled 2,048-token vocabulary is 101,222,400 bytes.
  const TimingModel small = timing_model_presets().front();
  ASSERT_EQ(small.label, "25M");
  ASSERT_EQ(small.type, "f32");
  EXPECT_EQ(timing_model_title(small, 2048), "25M F32 (96.5 MiB)");
  // Model details give the exact figure beside the readable one.
  EngineInfo info;
  info.weight_bytes = 18'459'648;
  EXPECT_TRUE(model_details_html(info).contains("18,459,648 bytes (17.6 MiB)"));
}

TEST(WindowText, TheDeviceLabelIsShortAndTheTooltipHasTheRest) {
  EngineInfo vulkan;
  vulkan.backend = "vulkan";
  vulkan.device = "llvmpipe (LLVM 15.0.6, 256 bits)";
  vulkan.driver = "Mesa 22.3.6";
  EXPECT_EQ(device_label(vulkan), "Vulkan on llvmpipe");
  EXPECT_TRUE(device_tooltip(vulkan).contains("LLVM 15.0.6, 256 bits"));
  EXPECT_TRUE(device_tooltip(vulkan).contains("Mesa 22.3.6"));

  EngineInfo cpu;
  cpu.backend = "cpu";
  cpu.device = "Intel(R) Xeon(R) Platinum 8488C";
  cpu.quantised_activations = true;
  EXPECT_EQ(device_label(cpu), "CPU, Q8_0 activations");
  EXPECT_TRUE(device_tooltip(cpu).contains("Platinum 8488C"));
}

TEST(WindowText, ModelDetailsListTheFactsAndTheFilesOwnProvenance) {
  EngineInfo info;
  info.model_name = "tiny";
  info.architecture = "gemma2";
  info.tensor_types = "F32 11, Q4_K 29";
  info.provenance = "Author: Ada & Co\nLicence: <CC-BY>\nChat template: none";
  info.random_weights = true;
  const QString html = model_details_html(info);
  EXPECT_TRUE(html.contains("<b>Architecture</b></td><td>gemma2<")) << html.toStdString();
  EXPECT_TRUE(html.contains("F32 11, Q4_K 29"));
  // Each provenance line is a row of its own, its text escaped.
  EXPECT_TRUE(html.contains("<b>Author</b></td><td>Ada &amp; Co<"));
  EXPECT_TRUE(html.contains("<b>Licence</b></td><td>&lt;CC-BY&gt;<"));
  EXPECT_TRUE(html.contains("<b>Chat template</b></td><td>none<"));
  EXPECT_TRUE(html.contains(random_weights_note_text().toHtmlEscaped()));
}

// Issue 25 item 8: "internal error: std::bad_alloc" said neither what failed nor why.
TEST(WindowText, AFailureForWantOfMemorySaysSo) {
  EXPECT_EQ(failure_text(std::bad_alloc(), "to load it (its file holds 2.0 GB)"),
            "not enough memory to load it (its file holds 2.0 GB)");
  EXPECT_EQ(failure_text(std::runtime_error("truncated"), "to load it"), "truncated");
}

}  // namespace
}  // namespace servescope::gui
