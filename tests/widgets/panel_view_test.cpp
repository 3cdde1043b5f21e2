#include "widgets/panel_view.h"

#include <gtest/gtest.h>

#include <QAction>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QTextDocument>
#include <QMenu>
#include <QPainter>
#include <QTemporaryDir>

#include "widgets/theme.h"

namespace servescope::widgets {
namespace {

// A minimal panel: one coloured square with a tooltip, or the empty state.
class SquarePanel : public PanelView {
 public:
  bool has_data = true;
  QString title() const override { return QStringLiteral("Square"); }
  QString csv() const override { return QStringLiteral("side_px\n40\n"); }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter painter(this);
    clear_tooltips();
    if (!has_data) {
      paint_empty_state(painter, QStringLiteral("No data yet: press Generate"));
      return;
    }
    painter.fillRect(rect(), theme().background);
    painter.fillRect(QRectF(10, 10, 40, 40), theme().prefill);
    add_tooltip(QRectF(10, 10, 40, 40), QStringLiteral("A square."));
  }
};

// The sweep chart's tooltip, one plain line per batch size after a long definition, showed as
// a single line 1,200 px wide over the lesson text.
TEST(PanelView, LongTooltipsWrapAndKeepTheirLines) {
  const QString plain =
      QString("Decode tokens per second with this many sequences decoding together. ").repeated(4) +
      "\nbatch 1: 733 tokens/s\nbatch 8: 2,688 tokens/s & <more>";
  const QString shown = PanelView::wrapping_tooltip(plain);
  ASSERT_TRUE(Qt::mightBeRichText(shown));
  QLabel label;  // as Qt's tooltip shows rich text: word-wrapped
  label.setWordWrap(true);
  label.setText(shown);
  EXPECT_LT(label.sizeHint().width(), 700);
  EXPECT_TRUE(label.text().contains("&lt;more&gt;"));  // escaped, not markup
  EXPECT_TRUE(label.text().contains("\nbatch 8"));     // its lines stay (pre-wrap)
  EXPECT_EQ(PanelView::wrapping_tooltip("<b>rich</b>"), "<b>rich</b>");
}

TEST(PanelView, SavesPngWithThePaintedPixels) {
  QTemporaryDir dir;
  SquarePanel panel;
  panel.resize(120, 80);
  const QString path = dir.filePath("square.png");
  ASSERT_TRUE(panel.save_png(path));
  QImage image(path);
  ASSERT_FALSE(image.isNull());
  const qreal dpr = panel.devicePixelRatioF();
  EXPECT_EQ(image.width(), qRound(120 * dpr));
  EXPECT_EQ(image.pixelColor(qRound(30 * dpr), qRound(30 * dpr)).rgb(), theme().prefill.rgb());
  EXPECT_EQ(image.pixelColor(qRound(100 * dpr), qRound(70 * dpr)).rgb(), theme().background.rgb());
}

TEST(PanelView, SavesSvgWithTheTitleAndTheSquare) {
  QTemporaryDir dir;
  SquarePanel panel;
  panel.resize(120, 80);
  const QString path = dir.filePath("square.svg");
  ASSERT_TRUE(panel.save_svg(path));
  QFile file(path);
  ASSERT_TRUE(file.open(QIODevice::ReadOnly));
  const QString svg = QString::fromUtf8(file.readAll());
  EXPECT_TRUE(svg.contains("<svg"));
  EXPECT_TRUE(svg.contains("<title>Square</title>"));
  EXPECT_TRUE(svg.contains(theme().prefill.name(), Qt::CaseInsensitive));
}

TEST(PanelView, SavesCsvVerbatim) {
  QTemporaryDir dir;
  SquarePanel panel;
  const QString path = dir.filePath("square.csv");
  ASSERT_TRUE(panel.save_csv(path));
  QFile file(path);
  ASSERT_TRUE(file.open(QIODevice::ReadOnly));
  EXPECT_EQ(QString::fromUtf8(file.readAll()), panel.csv());
  EXPECT_FALSE(panel.save_csv(dir.filePath("missing-folder/square.csv")));
}

TEST(PanelView, ContextMenuOffersTheThreeExports) {
  SquarePanel panel;
  std::unique_ptr<QMenu> menu(panel.make_context_menu(nullptr));
  QStringList texts;
  for (QAction* action : menu->actions()) texts << action->text();
  // With mnemonics: P, S and E from the keyboard once the menu is open.
  EXPECT_EQ(texts, (QStringList{"Save as &PNG...", "Save as &SVG...", "&Export data as CSV..."}));
}

TEST(PanelView, TooltipsFollowTheLastPaint) {
  SquarePanel panel;
  panel.resize(120, 80);
  panel.grab();
  EXPECT_EQ(panel.tooltip_at(QPointF(20, 20)), "A square.");
  EXPECT_TRUE(panel.tooltip_at(QPointF(100, 70)).isEmpty());
  panel.has_data = false;
  panel.grab();
  EXPECT_TRUE(panel.tooltip_at(QPointF(20, 20)).isEmpty());
}

// A panel that computes its tooltips from the position (a hit test registered before its
// square's area) instead of registering an area per item.
class ComputedTipPanel : public SquarePanel {
 protected:
  void paintEvent(QPaintEvent* event) override {
    SquarePanel::paintEvent(event);
    add_tooltip([](QPointF pos) -> std::optional<HoverHit> {
      if (pos.x() <= 60) return std::nullopt;
      return HoverHit{QStringLiteral("Right half."), QRectF(60, 0, 60, 80)};
    });
    add_tooltip(QRectF(10, 10, 40, 40), QStringLiteral("A square."));
  }
};

TEST(PanelView, LaterRegistrationsWinAndHitTestsNameTheirArea) {
  ComputedTipPanel panel;
  panel.resize(120, 80);
  panel.grab();
  EXPECT_EQ(panel.tooltip_at(QPointF(20, 20)), "A square.");
  EXPECT_EQ(panel.tooltip_at(QPointF(100, 20)), "Right half.");
  EXPECT_EQ(panel.tooltip_region(QPointF(100, 20)), QRect(60, 0, 60, 80));
  EXPECT_TRUE(panel.tooltip_at(QPointF(5, 70)).isEmpty());
}

TEST(PanelView, TooSmallPanelsAskForRoom) {
  class NeedsRoom : public SquarePanel {
   public:
    bool too_small = false;

   protected:
    void paintEvent(QPaintEvent*) override {
      QPainter painter(this);
      too_small = paint_if_too_small(painter, QSize(300, 200));
    }
  } panel;
  panel.resize(299, 400);
  panel.grab();
  EXPECT_TRUE(panel.too_small);
  panel.resize(300, 200);
  panel.grab();
  EXPECT_FALSE(panel.too_small);
}

TEST(PanelView, EmptyStateIsPaintedInTheThemeBackground) {
  set_theme(ThemeKind::kDark);
  SquarePanel panel;
  panel.has_data = false;
  panel.resize(200, 100);
  const QImage image = panel.grab().toImage();
  EXPECT_EQ(image.pixelColor(2, 2).rgb(), Theme::dark().background.rgb());
  set_theme(ThemeKind::kLight);
}

}  // namespace
}  // namespace servescope::widgets
