// Every panel of this folder, empty and full, light and dark, at small and large sizes: it
// paints without crashing, paints something, and exports PNG, SVG and CSV.
#include <gtest/gtest.h>

#include <QFileInfo>
#include <QImage>
#include <QPixmap>
#include <QTemporaryDir>
#include <functional>
#include <memory>
#include <ostream>
#include <set>

#include "tests/widgets/synthetic_model_snapshots.h"
#include "tests/widgets/synthetic_snapshots.h"
#include "widgets/theme.h"

namespace servescope::widgets {
namespace {

struct PanelCase {
  const char* name;
  std::function<std::unique_ptr<PanelView>(bool full)> make;
};

// ctest lists a case by its name, not by the bytes of the struct.
void PrintTo(const PanelCase& panel, std::ostream* out) { *out << panel.name; }

template <typename Panel, typename Snapshot>
std::unique_ptr<PanelView> make_panel(bool full, const Snapshot& snapshot) {
  auto panel = std::make_unique<Panel>();
  panel->set_snapshot(full ? snapshot : Snapshot{});
  return panel;
}

const PanelCase kPanels[] = {
    {"phases",
     [](bool full) { return make_panel<PhasesPanel>(full, testing::synthetic_phases(true)); }},
    {"phases_unmeasured",
     [](bool full) { return make_panel<PhasesPanel>(full, testing::synthetic_phases(false)); }},
    {"kv_cache",
     [](bool full) { return make_panel<KvCachePanel>(full, testing::synthetic_kv_cache()); }},
    {"batching",
     [](bool full) { return make_panel<BatchingPanel>(full, testing::synthetic_batching(true)); }},
    {"batching_no_sweep",
     [](bool full) { return make_panel<BatchingPanel>(full, testing::synthetic_batching(false)); }},
    {"quantisation",
     [](bool full) {
       return make_panel<QuantisationPanel>(full, testing::synthetic_quantisation());
     }},
    {"roofline",
     [](bool full) { return make_panel<RooflinePanel>(full, testing::synthetic_roofline()); }},
    {"attention_prefill",
     [](bool full) {
       return make_panel<AttentionPanel>(full, testing::synthetic_attention(24, false));
     }},
    {"attention_long_prefill",
     [](bool full) {
       return make_panel<AttentionPanel>(full, testing::synthetic_attention(300, false));
     }},
    {"attention_decode",
     [](bool full) {
       return make_panel<AttentionPanel>(full, testing::synthetic_attention(40, true));
     }},
    {"timeline",
     [](bool full) { return make_panel<TimelinePanel>(full, testing::synthetic_timeline()); }},
};

// Fields of one CSV row (RFC 4180: a comma inside quotes belongs to the field).
qsizetype csv_field_count(const QString& row) {
  qsizetype fields = 1;
  bool quoted = false;
  for (const QChar c : row) {
    if (c == QLatin1Char('"')) quoted = !quoted;  // a doubled quote toggles twice
    if (c == QLatin1Char(',') && !quoted) ++fields;
  }
  return fields;
}

int distinct_colors(const QImage& image) {
  std::set<QRgb> colors;
  for (int y = 0; y < image.height(); y += 3) {
    for (int x = 0; x < image.width(); x += 3) colors.insert(image.pixel(x, y));
  }
  return static_cast<int>(colors.size());
}

class PanelsPaint : public ::testing::TestWithParam<PanelCase> {
 protected:
  void TearDown() override { set_theme(ThemeKind::kLight); }
};

TEST_P(PanelsPaint, PaintsAtEverySizeEmptyAndFullInBothThemes) {
  for (ThemeKind kind : {ThemeKind::kLight, ThemeKind::kDark}) {
    set_theme(kind);
    for (bool full : {false, true}) {
      auto panel = GetParam().make(full);
      for (QSize size : {QSize(200, 150), QSize(800, 600), QSize(1920, 1080)}) {
        panel->resize(size);
        const QImage image = panel->grab().toImage();
        ASSERT_FALSE(image.isNull());
        // Background plus text at least; a full panel at a usable size draws many colours.
        EXPECT_GE(distinct_colors(image), 2) << size.width() << "x" << size.height();
        if (full && size.width() >= 800) {
          EXPECT_GE(distinct_colors(image), 8);
        }
        EXPECT_EQ(image.pixelColor(1, 1).rgb(), theme().background.rgb());
      }
    }
  }
}

TEST_P(PanelsPaint, ExportsPngSvgAndCsv) {
  QTemporaryDir dir;
  auto panel = GetParam().make(true);
  panel->resize(900, 600);
  const QString png = dir.filePath("panel.png");
  const QString svg = dir.filePath("panel.svg");
  const QString csv = dir.filePath("panel.csv");
  ASSERT_TRUE(panel->save_png(png));
  ASSERT_TRUE(panel->save_svg(svg));
  ASSERT_TRUE(panel->save_csv(csv));
  EXPECT_GT(QFileInfo(png).size(), 1000);
  EXPECT_GT(QFileInfo(svg).size(), 1000);
  EXPECT_EQ(QImage(png).width(), qRound(900 * panel->devicePixelRatioF()));
  const QStringList rows = panel->csv().split('\n', Qt::SkipEmptyParts);
  EXPECT_GT(rows.size(), 1);
  const qsizetype columns = csv_field_count(rows[0]);
  for (const QString& row : rows) EXPECT_EQ(csv_field_count(row), columns) << row.toStdString();
}

TEST_P(PanelsPaint, EmptyPanelSaysWhatToDo) {
  auto panel = GetParam().make(false);
  EXPECT_EQ(panel->csv().count('\n'), 1);  // the header alone
}

INSTANTIATE_TEST_SUITE_P(Panels, PanelsPaint, ::testing::ValuesIn(kPanels),
                         [](const ::testing::TestParamInfo<PanelCase>& param) {
                           return std::string(param.param.name);
                         });

// Snapshots no engine should send still paint: inverted times, overfull blocks, cells beyond
// the slot count, zero-sized models.
TEST(PanelsPaintHostile, OddSnapshotsDoNotCrash) {
  PhasesSnapshot phases;
  StepBar inverted;
  inverted.start_ms = 50;
  inverted.end_ms = 10;
  inverted.decode_tokens = 1;
  inverted.kernels_measured = true;
  inverted.attention_ms = -3;
  phases.steps = {inverted, inverted};
  PhasesPanel phases_panel;
  phases_panel.set_snapshot(phases);

  KvCacheSnapshot kv;
  kv.block_size = 0;
  kv.blocks = {KvBlock{-7, 99, -1, true, KvBlockEvent::kPreempt, -5},
               KvBlock{1LL << 40, 3, 9, false, {}, 0}};
  kv.history = {{-4, -100.0}};
  kv.layers = {{0.0, 0.0}};
  KvCachePanel kv_panel;
  kv_panel.set_snapshot(kv);

  BatchingSnapshot batching;
  batching.slot_count = 2;
  batching.steps = {
      {5, {SlotCell{3, SlotState::kDecode}, SlotCell{4, SlotState::kPrefill}, SlotCell{1, {}}}},
      {2, {}}};
  batching.requests = {{1, -5.0, 1e12, 0, false}};
  batching.sweep = {{0, 0.0, 0.0}};
  BatchingPanel batching_panel;
  batching_panel.set_snapshot(batching);

  for (PanelView* panel :
       std::initializer_list<PanelView*>{&phases_panel, &kv_panel, &batching_panel}) {
    for (QSize size : {QSize(1, 1), QSize(600, 400), QSize(1200, 700)}) {
      panel->resize(size);
      EXPECT_FALSE(panel->grab().isNull());
      EXPECT_FALSE(panel->csv().isEmpty());
    }
  }
}

}  // namespace
}  // namespace servescope::widgets
