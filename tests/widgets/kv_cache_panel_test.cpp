#include "widgets/kv_cache_panel.h"

#include <gtest/gtest.h>

#include <QImage>
#include <QPixmap>
#include <QStringList>
#include <algorithm>

#include "tests/widgets/lecture_room.h"
#include "tests/widgets/synthetic_snapshots.h"
#include "tests/widgets/text_probe.h"
#include "widgets/theme.h"

namespace servescope::widgets {
namespace {

KvBlock block(int64_t owner, int32_t tokens, int32_t refs = 1) {
  KvBlock b;
  b.owner = owner;
  b.fill = tokens;
  b.ref_count = owner < 0 ? 0 : refs;
  return b;
}

// The default model's numbers: 5 layers, 2 KV heads, head dim 64, F32.
KvCacheSnapshot default_model_snapshot() {
  KvCacheSnapshot snap;
  snap.block_size = 16;
  snap.model = {5, 2, 64, 4.0, "F32"};
  snap.blocks = {block(3, 16, 2), block(3, 16), block(3, 5),
                 block(-1, 0),    block(7, 9),  block(-1, 0)};
  return snap;
}

TEST(KvCachePanel, FormulaUsesTheModelsNumbers) {
  KvCachePanel panel;
  panel.set_snapshot(default_model_snapshot());
  // 2 x 5 x 2 x 64 x 4 bytes, as the model card states.
  EXPECT_EQ(panel.bytes_per_token(), 5120.0);
  EXPECT_EQ(panel.bytes_per_block(), 16 * 5120.0);
  EXPECT_EQ(panel.formula_text(),
            "per token: 2 (K and V) x 5 layers x 2 KV heads x 64 head dim x 4 B (F32) = 5,120 B\n"
            "per block of 16 tokens: 16 x 5,120 B = 80 KiB; a request holds ceil(tokens / 16) "
            "blocks");

  KvCacheSnapshot q8 = default_model_snapshot();
  q8.model = {22, 4, 64, 34.0 / 32.0, "Q8_0"};  // Q8_0: 32 values in 34 bytes
  panel.set_snapshot(q8);
  EXPECT_DOUBLE_EQ(panel.bytes_per_token(), 2 * 22 * 4 * 64 * 34.0 / 32.0);
  EXPECT_TRUE(
      panel.formula_text().contains("x 22 layers x 4 KV heads x 64 head dim x 1.0625 B (Q8_0)"));
  EXPECT_TRUE(panel.formula_text().contains("= 11,968 B"));
}

TEST(KvCachePanel, FormulaRoundsUpToWholeBlocks) {
  KvCachePanel panel;
  panel.set_snapshot(default_model_snapshot());
  EXPECT_EQ(panel.formula_bytes(0), 0.0);
  EXPECT_EQ(panel.formula_bytes(1), 16 * 5120.0);
  EXPECT_EQ(panel.formula_bytes(16), 16 * 5120.0);
  EXPECT_EQ(panel.formula_bytes(17), 32 * 5120.0);
  EXPECT_EQ(panel.formula_bytes(100), 7 * 16 * 5120.0);
}

TEST(KvCachePanel, CountsUsedSharedAndRecentlyChangedBlocks) {
  KvCacheSnapshot snap = default_model_snapshot();
  snap.blocks[2].last_event = KvBlockEvent::kWrite;
  snap.blocks[2].event_age_frames = 0;
  snap.blocks[3].last_event = KvBlockEvent::kFree;
  snap.blocks[3].event_age_frames = KvCachePanel::kEventFadeFrames - 1;
  snap.blocks[4].last_event = KvBlockEvent::kAllocate;
  snap.blocks[4].event_age_frames = KvCachePanel::kEventFadeFrames;  // faded
  KvCachePanel panel;
  panel.set_snapshot(snap);
  EXPECT_EQ(panel.used_block_count(), 4);
  EXPECT_EQ(panel.shared_block_count(), 1);
  EXPECT_EQ(panel.highlighted_block_count(), 2);
  EXPECT_EQ(KvCachePanel::event_strength(snap.blocks[2]), 1.0);
  EXPECT_NEAR(KvCachePanel::event_strength(snap.blocks[3]), 1.0 / KvCachePanel::kEventFadeFrames,
              1e-12);
  EXPECT_EQ(KvCachePanel::event_strength(snap.blocks[4]), 0.0);
  EXPECT_EQ(KvCachePanel::event_strength(snap.blocks[0]), 0.0);
}

// A block held by n sequences would be n blocks: the heading says what sharing saves.
TEST(KvCachePanel, TheHeadingSaysWhatSharedBlocksSave) {
  KvCacheSnapshot snap = default_model_snapshot();
  snap.blocks[1].ref_count = 3;  // with block 0 (2 refs): 1 + 2 blocks saved
  KvCachePanel panel;
  panel.set_snapshot(snap);
  EXPECT_EQ(panel.blocks_saved_by_sharing(), 3);
  panel.resize(1200, 700);
  panel.grab();
  EXPECT_FALSE(
      testing::painted_text_starting(
          panel, "KV cache: 4 of 6 blocks in use, 46 tokens held in blocks of 16; sharing saves "
                 "3 blocks, 240 KiB")
          .isEmpty());
}

TEST(KvCachePanel, LegendNamesYourRequestThenTheClassmatesThenTheBlockKinds) {
  KvCachePanel panel;
  panel.set_snapshot(default_model_snapshot());
  EXPECT_EQ(panel.legend_labels(),
            (QStringList{"classmates (hover for the number)", "prefix-shared (x sequences)",
                         "free", "free, prefix cached", "recent event"}));
  KvCacheSnapshot yours = default_model_snapshot();
  yours.own_requests = OwnRequests({7});
  panel.set_snapshot(yours);
  EXPECT_EQ(panel.legend_labels().mid(0, 2),
            (QStringList{"your request 7", "classmates (hover for the number)"}));
}

TEST(KvCachePanel, GridShapeGivesTheLargestSquareCells) {
  KvCacheSnapshot snap = default_model_snapshot();
  snap.blocks.assign(64, block(-1, 0));
  KvCachePanel panel;
  panel.set_snapshot(snap);
  EXPECT_EQ(panel.grid_shape(QSizeF(400, 400)), QSize(8, 8));
  EXPECT_EQ(panel.grid_shape(QSizeF(800, 200)), QSize(16, 4));
  EXPECT_EQ(panel.grid_shape(QSizeF(0, 200)), QSize(0, 0));
}

TEST(KvCachePanel, MemorySegmentsAddUpToTheCapacity) {
  KvCacheSnapshot snap = default_model_snapshot();
  snap.memory = {"dev", 100.0, 40.0, 10.0, 1000.0};
  KvCachePanel panel;
  panel.set_snapshot(snap);
  const auto segments = panel.memory_segments();
  ASSERT_EQ(segments.size(), 4u);
  EXPECT_EQ(segments[0].first, "weights");
  EXPECT_EQ(segments[1].second, 40.0);
  EXPECT_EQ(segments[3].first, "free");
  EXPECT_EQ(segments[3].second, 850.0);

  snap.memory.capacity_bytes = 0.0;  // not reported: no "free" segment to invent
  panel.set_snapshot(snap);
  EXPECT_EQ(panel.memory_segments().size(), 3u);
}

TEST(KvCachePanel, CsvHasOneRowPerBlock) {
  KvCacheSnapshot snap = default_model_snapshot();
  snap.blocks[3].cached_prefix = true;
  snap.blocks[3].last_event = KvBlockEvent::kEvict;
  snap.blocks[3].event_age_frames = 4;
  KvCachePanel panel;
  panel.set_snapshot(snap);
  const QStringList rows = panel.csv().split('\n', Qt::SkipEmptyParts);
  ASSERT_EQ(rows.size(), 7);
  EXPECT_EQ(rows[0],
            "block,owner_request,tokens_used,block_size,ref_count,cached_prefix,last_event,"
            "event_age_frames");
  EXPECT_EQ(rows[1], "0,3,16,16,2,false,,0");
  EXPECT_EQ(rows[4], "3,,0,16,0,true,evict,4");
}

TEST(KvCachePanel, HoveringABlockExplainsIt) {
  KvCacheSnapshot snap = default_model_snapshot();
  snap.blocks[4].last_event = KvBlockEvent::kWrite;
  snap.blocks[4].event_age_frames = 2;
  KvCachePanel panel;
  panel.set_snapshot(snap);
  panel.resize(1200, 700);
  panel.grab();
  // Walk across the panel: every block is found exactly where block_at says, in index order.
  std::vector<int> seen;
  for (int y = 0; y < 700; y += 4) {
    for (int x = 0; x < 1200; x += 4) {
      const std::optional<int> index = panel.block_at(QPointF(x, y));
      if (index && std::find(seen.begin(), seen.end(), *index) == seen.end()) {
        seen.push_back(*index);
      }
    }
  }
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  for (int y = 0; y < 700; y += 4) {
    for (int x = 0; x < 1200; x += 4) {
      if (panel.block_at(QPointF(x, y)) == 4) {
        EXPECT_EQ(panel.tooltip_at(QPointF(x, y)),
                  "Block 4: request 7, 9 of 16 tokens written; last event: write, 2 frames ago.");
        return;
      }
    }
  }
  FAIL() << "block 4 not found";
}

// A class's cache (128 blocks) in a lecture's room.
void paint_at_lecture_size(KvCachePanel& panel, const QString& highlight) {
  panel.set_snapshot(testing::synthetic_kv_cache_class());
  testing::paint_in_lecture_room(panel, highlight);
}

TEST(KvCachePanel, InAProjectorsRoomTheGridAndTheFormulaChartStay) {
  KvCachePanel panel;
  paint_at_lecture_size(panel, {});
  EXPECT_FALSE(panel.element_shape("blocks").isEmpty());
  EXPECT_FALSE(panel.element_shape("retained-bytes").isEmpty());
  EXPECT_TRUE(panel.element_shape("layers").isEmpty());
  EXPECT_TRUE(panel.element_shape("memory").isEmpty());
  EXPECT_FALSE(testing::painted_text_starting(
                   panel, "Hidden for room: bytes per layer, device memory. A larger window or T")
                   .isEmpty());
}

TEST(KvCachePanel, AHighlightedChartStaysOnScreenInAProjectorsRoom) {
  for (const char* element : {"layers", "memory"}) {
    KvCachePanel panel;
    paint_at_lecture_size(panel, element);
    EXPECT_FALSE(panel.element_shape(element).isEmpty()) << element;
  }
}

TEST(KvCachePanel, EventLettersHaveSevenToOneContrastOnAnyRequestColour) {
  for (ThemeKind kind : {ThemeKind::kLight, ThemeKind::kDark}) {
    set_theme(kind, true);
    KvCachePanel panel;
    panel.set_snapshot(testing::synthetic_kv_cache());
    panel.resize(1200, 700);
    const QImage image = panel.grab().toImage();
    int letters = 0;
    for (const auto& text : testing::rendered_contrast(image, testing::painted_texts(panel))) {
      if (text.text.text.size() != 1) continue;
      ++letters;
      EXPECT_GE(text.ratio, 7.0) << text.text.text.toStdString();
    }
    EXPECT_GE(letters, 5);
  }
  set_theme(ThemeKind::kLight);
}

}  // namespace
}  // namespace servescope::widgets
