// Renders every panel of this folder with a synthetic snapshot to PNG, light and dark, so a
// person can look at them: widgets_render <output folder> [width height [font points]].
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFont>
#include <QImage>
#include <cstdio>
#include <memory>

#include "tests/widgets/synthetic_model_snapshots.h"
#include "tests/widgets/synthetic_snapshots.h"
#include "widgets/theme.h"

namespace {

using namespace servescope::widgets;

// Mean time of one paint into an offscreen image, light theme: the panel's share of a frame.
void print_paint_time(PanelView& panel, const char* name) {
  QImage image(panel.size(), QImage::Format_ARGB32_Premultiplied);
  constexpr int kRounds = 20;
  QElapsedTimer timer;
  timer.start();
  for (int i = 0; i < kRounds; ++i) panel.render(&image);
  std::printf("%-18s %4dx%-4d %6.2f ms per paint\n", name, panel.width(), panel.height(),
              double(timer.nsecsElapsed()) / 1e6 / kRounds);
}

bool render(PanelView& panel, const QString& folder, const QString& name, QSize size) {
  panel.resize(size);
  bool ok = true;
  for (ThemeKind kind : {ThemeKind::kLight, ThemeKind::kDark}) {
    set_theme(kind);
    const QString path = QDir(folder).filePath(
        QStringLiteral("%1-%2.png").arg(name, kind == ThemeKind::kLight ? "light" : "dark"));
    if (!panel.save_png(path)) {
      std::fprintf(stderr, "could not write %s\n", qPrintable(path));
      ok = false;
    }
  }
  set_theme(ThemeKind::kLight);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: widgets_render <output folder> [width height [font points]]\n");
    return 2;
  }
  const QString folder = QString::fromLocal8Bit(argv[1]);
  if (!QDir().mkpath(folder)) {
    std::fprintf(stderr, "cannot create %s\n", argv[1]);
    return 1;
  }
  const QSize size = argc >= 4 ? QSize(std::atoi(argv[2]), std::atoi(argv[3])) : QSize(1200, 700);

  if (argc >= 5) {
    QFont font = QApplication::font();
    font.setPointSizeF(std::atof(argv[4]));
    QApplication::setFont(font);
  }

  bool ok = true;
  {
    PhasesPanel panel;
    panel.set_snapshot(testing::synthetic_phases(true));
    ok &= render(panel, folder, "phases", size);
    print_paint_time(panel, "phases");
    panel.set_snapshot(testing::synthetic_phases(false));
    ok &= render(panel, folder, "phases-unmeasured", size);
    panel.set_snapshot({});
    ok &= render(panel, folder, "phases-empty", size);
  }
  {
    KvCachePanel panel;
    panel.set_snapshot(testing::synthetic_kv_cache());
    ok &= render(panel, folder, "kv-cache", size);
    print_paint_time(panel, "kv-cache");
    panel.set_snapshot({});
    ok &= render(panel, folder, "kv-cache-empty", size);
  }
  {
    BatchingPanel panel;
    panel.set_snapshot(testing::synthetic_batching(true));
    ok &= render(panel, folder, "batching", size);
    print_paint_time(panel, "batching");
    panel.set_snapshot(testing::synthetic_batching(false));
    ok &= render(panel, folder, "batching-no-sweep", size);
    panel.set_snapshot({});
    ok &= render(panel, folder, "batching-empty", size);
  }
  {
    TimelinePanel panel;
    panel.set_snapshot(testing::synthetic_timeline(16));
    ok &= render(panel, folder, "timeline", size);
    print_paint_time(panel, "timeline");
    panel.set_snapshot({});
    ok &= render(panel, folder, "timeline-empty", size);
  }
  {
    RooflinePanel panel;
    panel.set_snapshot(testing::synthetic_roofline());
    ok &= render(panel, folder, "roofline", size);
    print_paint_time(panel, "roofline");
    RooflineSnapshot many = testing::synthetic_roofline();
    for (int i = 0; i < 2000; ++i) {
      RooflinePoint p = many.points[static_cast<size_t>(i) % many.points.size()];
      p.step_index = 100 + i;
      many.points.push_back(p);
    }
    panel.set_snapshot(many);
    print_paint_time(panel, "roofline-2000");
    RooflineSnapshot unprobed = testing::synthetic_roofline();
    unprobed.cache_gb_per_s = unprobed.memory_gb_per_s = unprobed.compute_gflop_per_s = 0.0;
    panel.set_snapshot(unprobed);
    ok &= render(panel, folder, "roofline-unprobed", size);
    panel.set_snapshot({});
    ok &= render(panel, folder, "roofline-empty", size);
  }
  {
    QuantisationPanel panel;
    panel.set_snapshot(testing::synthetic_quantisation());
    ok &= render(panel, folder, "quantisation", size);
    print_paint_time(panel, "quantisation");
    panel.set_snapshot({});
    ok &= render(panel, folder, "quantisation-empty", size);
  }
  {
    AttentionPanel panel;
    panel.set_snapshot(testing::synthetic_attention(24, false));
    ok &= render(panel, folder, "attention", size);
    print_paint_time(panel, "attention");
    panel.set_snapshot(testing::synthetic_attention(120, false));
    ok &= render(panel, folder, "attention-long", size);
    print_paint_time(panel, "attention-120");
    panel.set_snapshot(testing::synthetic_attention(512, false));
    print_paint_time(panel, "attention-512");
    panel.set_snapshot(testing::synthetic_attention(40, true));
    ok &= render(panel, folder, "attention-decode", size);
    panel.set_snapshot({});
    ok &= render(panel, folder, "attention-empty", size);
  }
  return ok ? 0 : 1;
}
