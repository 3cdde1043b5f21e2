// The batching, phases, KV and timeline panels at a normal window's sizes and type, with the tests' usual
// data and a class's: no text overlaps, is cut or elided (the lecture sizes have their own test).
#include <gtest/gtest.h>

#include <QFont>
#include <functional>
#include <memory>
#include <string>

#include "tests/widgets/synthetic_snapshots.h"
#include "tests/widgets/text_probe.h"
#include "widgets/theme.h"

namespace servescope::widgets {
namespace {

struct NamedPanel {
  const char* name;
  std::function<std::unique_ptr<PanelView>()> make;
};

using testing::panel_with;

const NamedPanel kPanels[] = {
    {"phases", [] { return panel_with<PhasesPanel>(testing::synthetic_phases(true)); }},
    {"phases, 400 steps",
     [] { return panel_with<PhasesPanel>(testing::synthetic_phases(true, 400)); }},
    {"kv_cache", [] { return panel_with<KvCachePanel>(testing::synthetic_kv_cache()); }},
    {"kv_cache, a class",
     [] { return panel_with<KvCachePanel>(testing::synthetic_kv_cache_class()); }},
    {"batching", [] { return panel_with<BatchingPanel>(testing::synthetic_batching(true)); }},
    {"batching, a class",
     [] { return panel_with<BatchingPanel>(testing::synthetic_batching_class(true)); }},
    {"timeline", [] { return panel_with<TimelinePanel>(testing::synthetic_timeline(36)); }},
};

TEST(NormalLayout, NoTextOverlapsIsCutOrElided) {
  for (const NamedPanel& entry : kPanels) {
    for (QSize size : {QSize(1200, 700), QSize(900, 560), QSize(640, 420)}) {
      for (qreal points : {9.0, 12.0}) {
        auto panel = entry.make();
        QFont font = panel->font();
        font.setPointSizeF(points);
        panel->setFont(font);
        panel->resize(size);
        for (const std::string& fault :
             testing::layout_faults(testing::painted_texts(*panel), QRectF(panel->rect())))
          ADD_FAILURE() << entry.name << " at " << size.width() << "x" << size.height() << ", "
                        << points << " pt: " << fault;
      }
    }
  }
}

}  // namespace
}  // namespace servescope::widgets
