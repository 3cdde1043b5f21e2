// Every panel at lecture size (a 1280x720 projector, and 1920x1080) in lecture type (24 px) and
// both high-contrast themes: no two texts overlap, none is cut or elided, every text has at
// least 7:1 contrast as rendered. The text probe reads what the paint put on screen.
#include <gtest/gtest.h>

#include <QFont>
#include <QImage>
#include <QLabel>
#include <QPainter>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "tests/widgets/synthetic_model_snapshots.h"
#include "tests/widgets/synthetic_snapshots.h"
#include "tests/widgets/text_probe.h"
#include "widgets/theme.h"

namespace servescope::widgets {
namespace {

using testing::contrast_ratio;
using testing::layout_faults;
using testing::painted_texts;
using testing::rendered_contrast;

// The probe itself: a label's text is found where it is painted, in the label's colour.
TEST(TextProbe, FindsAPaintedTextWhereItIs) {
  QWidget parent;
  parent.resize(400, 200);
  auto* label = new QLabel("Hello probe", &parent);
  QFont font = label->font();
  font.setPixelSize(20);
  label->setFont(font);
  label->move(100, 50);
  label->adjustSize();
  const auto texts = painted_texts(parent);
  ASSERT_EQ(texts.size(), 1u);
  EXPECT_EQ(texts[0].text, "Hello probe");
  EXPECT_NEAR(texts[0].box.left(), 100, 4);
  EXPECT_GT(texts[0].box.top(), 48);
  EXPECT_LT(texts[0].box.bottom(), 50 + label->height() + 2);
  EXPECT_NEAR(texts[0].box.height(), QFontMetricsF(font).height(), 2);
}

TEST(TextProbe, SeesOverlapsElisionAndPoorContrast) {
  class TwoTexts : public QWidget {
   protected:
    void paintEvent(QPaintEvent*) override {
      QPainter painter(this);
      painter.fillRect(rect(), Qt::white);
      painter.setPen(QColor(150, 150, 150));
      painter.drawText(QPointF(10, 30), "overlapping one");
      painter.drawText(QPointF(20, 35), QStringLiteral("elided\u2026"));
    }
  } widget;
  widget.resize(300, 100);
  const auto texts = painted_texts(widget);
  const auto faults = layout_faults(texts, QRectF(widget.rect()));
  ASSERT_EQ(faults.size(), 2u);
  EXPECT_NE(faults[0].find("overlap"), std::string::npos);
  EXPECT_NE(faults[1].find("elided"), std::string::npos);
  const auto contrast = rendered_contrast(widget.grab().toImage(), texts);
  ASSERT_EQ(contrast.size(), 2u);
  EXPECT_NEAR(contrast[0].ratio, contrast_ratio(Qt::white, QColor(150, 150, 150)), 0.2);
  EXPECT_NEAR(contrast_ratio(Qt::white, Qt::black), 21.0, 1e-9);
}

}  // namespace
}  // namespace servescope::widgets

namespace servescope::widgets {
namespace {

struct LecturePanel {
  const char* name;
  std::function<std::unique_ptr<PanelView>()> make;
};

// ctest lists a case by its name.
void PrintTo(const LecturePanel& panel, std::ostream* out) { *out << panel.name; }

using testing::panel_with;

// Remote mode's view of a class of 16 at a llama.cpp server: four series over a minute, three
// facts, a latency row per request, the note on what is not available.
RemoteView synthetic_remote_view() {
  RemoteView view;
  view.heading = "Batching at llama.cpp's server at http://127.0.0.1:8080 (model stories.gguf)";
  view.facts << "8 slots: at most 8 requests decode together; the others wait (reported by the "
                "server, /slots)."
             << "Since connecting: 16150 tokens generated in 2086 batched decode calls, 7.74 per "
                "call (reported by the server)."
             << "Requests sent: 313; streams open now: 16 (measured by ServeScope).";
  RemoteChart chart{"remote-requests", "Requests over time", "requests", true, 1.0, {}};
  const char* names[] = {"running", "waiting", "slots busy", "streams open"};
  for (int s = 0; s < 4; ++s) {
    RemoteSeries series{names[s], s == 3 ? FigureSource::kMeasured : FigureSource::kReported, {}};
    for (int i = 0; i < 600; ++i) series.points.emplace_back(0.1 * i, (i * (s + 3)) % 9 + s);
    chart.series.push_back(series);
  }
  view.charts.push_back(chart);
  // Wide figures: four-digit request numbers, "so far" counts, the user's row among them.
  for (int r = 0; r < 40; ++r) {
    view.requests.push_back({1290 + r, r == 3, 1300.5 + r, 20.25 + 0.1 * r, 132 + r, r < 30});
  }
  view.not_available = "Which request held which slot in each step, and the batch sweep: not "
                       "available from a remote server (it reports counts, not its steps).";
  return view;
}

std::unique_ptr<PanelView> remote_panel() {
  auto panel = panel_with<BatchingPanel>(testing::synthetic_batching_class(true));
  panel->set_remote_view(synthetic_remote_view());
  return panel;
}

const LecturePanel kLecturePanels[] = {
    {"remote_batching", remote_panel},
    {"phases", [] { return panel_with<PhasesPanel>(testing::synthetic_phases(true, 400)); }},
    {"kv_cache", [] { return panel_with<KvCachePanel>(testing::synthetic_kv_cache_class()); }},
    {"batching", [] { return panel_with<BatchingPanel>(testing::synthetic_batching_class(true)); }},
    {"quantisation",
     [] { return panel_with<QuantisationPanel>(testing::synthetic_quantisation_every_type()); }},
    {"roofline", [] { return panel_with<RooflinePanel>(testing::synthetic_roofline_class()); }},
    {"attention",
     [] { return panel_with<AttentionPanel>(testing::synthetic_attention(150, true)); }},
    {"timeline", [] { return panel_with<TimelinePanel>(testing::synthetic_timeline(36)); }},
};

// The panel area lecture mode leaves at 1280x720 (under the step's strip) and at 1920x1080.
const QSize kLectureSizes[] = {QSize(1280, 460), QSize(1920, 820)};

std::unique_ptr<PanelView> at_lecture_size(const LecturePanel& entry, QSize size) {
  auto panel = entry.make();
  QFont font = panel->font();
  font.setPointSizeF(18);  // lecture mode's 24 px body at 96 dpi, in points as it sets it
  panel->setFont(font);
  panel->resize(size);
  return panel;
}

std::string where(const LecturePanel& entry, QSize size, ThemeKind kind) {
  return std::string(entry.name) + " at " + std::to_string(size.width()) + "x" +
         std::to_string(size.height()) + (kind == ThemeKind::kDark ? ", dark" : ", light");
}

// Writes the panel as painted when SERVESCOPE_TEST_SHOTS names a folder, to look at.
void keep_shot(const QImage& image, const std::string& name) {
  const QByteArray folder = qgetenv("SERVESCOPE_TEST_SHOTS");
  if (folder.isEmpty()) return;
  QString file = QString::fromStdString("lecture-" + name + ".png");
  file.replace(' ', '-').replace(',', "");
  image.save(QString::fromUtf8(folder) + '/' + file);
}

class LectureLayout : public ::testing::TestWithParam<LecturePanel> {
 protected:
  void TearDown() override { set_theme(ThemeKind::kLight); }
};

TEST_P(LectureLayout, NoTextOverlapsIsCutOrElided) {
  for (ThemeKind kind : {ThemeKind::kLight, ThemeKind::kDark}) {
    set_theme(kind, true);
    for (QSize size : kLectureSizes) {
      auto panel = at_lecture_size(GetParam(), size);
      const auto texts = painted_texts(*panel);
      EXPECT_GE(texts.size(), 10u) << where(GetParam(), size, kind) << ": a chart, not a message";
      for (const std::string& fault : layout_faults(texts, QRectF(panel->rect())))
        ADD_FAILURE() << where(GetParam(), size, kind) << ": " << fault;
    }
  }
}

TEST_P(LectureLayout, EveryTextHasSevenToOneContrast) {
  for (ThemeKind kind : {ThemeKind::kLight, ThemeKind::kDark}) {
    set_theme(kind, true);
    for (QSize size : kLectureSizes) {
      auto panel = at_lecture_size(GetParam(), size);
      const QImage image = panel->grab().toImage();
      keep_shot(image, where(GetParam(), size, kind));
      for (const auto& text : rendered_contrast(image, painted_texts(*panel))) {
        EXPECT_GE(text.ratio, 7.0) << where(GetParam(), size, kind) << ": \""
                                   << text.text.text.toStdString() << "\" "
                                   << text.ink.name().toStdString() << " on "
                                   << text.background.name().toStdString();
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Panels, LectureLayout, ::testing::ValuesIn(kLecturePanels),
                         [](const ::testing::TestParamInfo<LecturePanel>& param) {
                           return std::string(param.param.name);
                         });

}  // namespace
}  // namespace servescope::widgets
