// Checks every panel test shares: painting at small, medium and full-HD sizes in both themes,
// and exporting images. A panel passes when each paint yields an image with something drawn
// on it besides the background (text at least), without crashing.
#pragma once

#include <gtest/gtest.h>

#include <QFile>
#include <QImage>
#include <QSize>
#include <QTemporaryDir>

#include "widgets/panel_view.h"
#include "widgets/theme.h"

namespace servescope::widgets {

// Pixels that differ from the top-left corner (the background) in a paint of `panel`.
inline int64_t painted_pixels(PanelView& panel) {
  const QImage image = panel.grab().toImage();
  if (image.isNull()) return -1;
  const QRgb background = image.pixel(0, 0);
  int64_t count = 0;
  for (int y = 0; y < image.height(); ++y) {
    for (int x = 0; x < image.width(); ++x) count += image.pixel(x, y) != background;
  }
  return count;
}

inline void expect_paints_everywhere(PanelView& panel) {
  for (const ThemeKind kind : {ThemeKind::kLight, ThemeKind::kDark}) {
    set_theme(kind);
    for (const QSize size : {QSize(200, 150), QSize(800, 600), QSize(1920, 1080)}) {
      panel.resize(size);
      EXPECT_GT(painted_pixels(panel), 0)
          << panel.title().toStdString() << " at " << size.width() << "x" << size.height();
    }
  }
  set_theme(ThemeKind::kLight);
}

inline void expect_exports_images(PanelView& panel) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  const QString png = dir.filePath(QStringLiteral("panel.png"));
  const QString svg = dir.filePath(QStringLiteral("panel.svg"));
  ASSERT_TRUE(panel.save_png(png));
  ASSERT_TRUE(panel.save_svg(svg));
  const QImage image(png);
  EXPECT_FALSE(image.isNull());
  EXPECT_GT(image.width(), 0);
  QFile file(svg);
  ASSERT_TRUE(file.open(QIODevice::ReadOnly));
  const QByteArray text = file.readAll();
  EXPECT_TRUE(text.contains("<svg"));
  EXPECT_GT(text.size(), 1000);  // more than an empty document: the panel's shapes and text
}

}  // namespace servescope::widgets
