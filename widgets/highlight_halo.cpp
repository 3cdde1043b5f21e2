#include "widgets/highlight_halo.h"

#include <QPainter>
#include <QPen>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace servescope::widgets {
namespace {

// Which pixels of `box` the element covers: its areas, directly (hundreds of bars cost their
// pixels), and its paths' filled parts and, as hairlines, their lines (a roof is a line, whose
// fill is empty).
std::vector<uint8_t> coverage(const ElementShape& element, const QRect& box, qreal ratio) {
  QImage mask(box.size(), QImage::Format_Grayscale8);
  mask.fill(0);
  {
    QPainter painter(&mask);
    painter.translate(-box.topLeft());
    painter.scale(ratio, ratio);
    QPen hairline(Qt::white, 0);
    hairline.setCosmetic(true);
    for (const QPainterPath& path : element.paths) {
      painter.fillPath(path, Qt::white);
      painter.strokePath(path, hairline);
    }
  }
  std::vector<uint8_t> inside(static_cast<size_t>(box.width()) * box.height());
  for (int y = 0; y < box.height(); ++y) {
    const uchar* row = mask.constScanLine(y);
    for (int x = 0; x < box.width(); ++x) inside[size_t(y) * box.width() + x] = row[x] > 127;
  }
  for (const QRectF& area : element.areas) {
    const QRect pixels = QRectF(area.topLeft() * ratio, area.size() * ratio)
                             .toAlignedRect()
                             .translated(-box.topLeft()) &
                         QRect(QPoint(0, 0), box.size());
    for (int y = pixels.top(); y <= pixels.bottom(); ++y) {
      uint8_t* row = &inside[size_t(y) * box.width()];
      std::fill(row + pixels.left(), row + pixels.right() + 1, uint8_t{1});
    }
  }
  return inside;
}

// For every pixel, the distance (pixel centre to pixel centre) to the nearest pixel on the other
// side of the shape's edge; distances beyond `cap` read as cap + 1. Exact Euclidean: the
// horizontal distance per row first, then the nearest over the rows within the cap.
std::vector<float> distances_across_edge(const std::vector<uint8_t>& inside, int w, int h,
                                         int cap) {
  const int far = cap + 1;
  std::vector<int> across(inside.size(), far);  // horizontal distance to the other side
  for (int y = 0; y < h; ++y) {
    const uint8_t* row = &inside[size_t(y) * w];
    int* out = &across[size_t(y) * w];
    // The nearest pixel whose side differs from pixel x's, leftwards then rightwards.
    int last_in = -far - 1, last_out = -far - 1;
    for (int x = 0; x < w; ++x) {
      (row[x] ? last_in : last_out) = x;
      out[x] = std::min(far, x - (row[x] ? last_out : last_in));
    }
    last_in = last_out = w + far;
    for (int x = w - 1; x >= 0; --x) {
      (row[x] ? last_in : last_out) = x;
      out[x] = std::min(out[x], (row[x] ? last_out : last_in) - x);
    }
  }
  std::vector<float> distance(inside.size(), static_cast<float>(far));
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const size_t at = size_t(y) * w + x;
      const uint8_t side = inside[at];
      int best = far * far;
      for (int dy = 0; dy <= cap && dy * dy < best; ++dy) {
        for (const int yy : {y - dy, y + dy}) {
          if (yy < 0 || yy >= h) continue;
          const size_t other = size_t(yy) * w + x;
          // A pixel on the other side in that row, or this column's pixel itself.
          const int dx = inside[other] != side ? 0 : across[other];
          if (dx <= cap) best = std::min(best, dx * dx + dy * dy);
        }
      }
      distance[at] = std::sqrt(static_cast<float>(best));
    }
  }
  return distance;
}

float clamp01(float v) { return std::clamp(v, 0.0f, 1.0f); }

// `top` over `bottom`, both premultiplied, as floats 0..1 (a, r, g, b).
struct Premultiplied {
  float a = 0, r = 0, g = 0, b = 0;
  static Premultiplied of(const QColor& c, float coverage) {
    const float a = static_cast<float>(c.alphaF()) * coverage;
    return {a, static_cast<float>(c.redF()) * a, static_cast<float>(c.greenF()) * a,
            static_cast<float>(c.blueF()) * a};
  }
  Premultiplied over(const Premultiplied& bottom) const {
    const float k = 1.0f - a;
    return {a + bottom.a * k, r + bottom.r * k, g + bottom.g * k, b + bottom.b * k};
  }
  QRgb rgb() const {
    auto byte = [](float v) { return static_cast<int>(std::lround(clamp01(v) * 255.0f)); };
    return qRgba(byte(r), byte(g), byte(b), byte(a));
  }
};

}  // namespace

QRectF ElementShape::bounds() const {
  std::vector<QRectF> boxes = areas;
  for (const QPainterPath& path : paths) boxes.push_back(path.boundingRect());
  if (boxes.empty()) return {};
  QRectF all = boxes.front();
  for (const QRectF& r : boxes) {  // a line's box has no height: no QRectF::united
    all.setCoords(std::min(all.left(), r.left()), std::min(all.top(), r.top()),
                  std::max(all.right(), r.right()), std::max(all.bottom(), r.bottom()));
  }
  return all;
}

QPainterPath ElementShape::path() const {
  QPainterPath all;
  for (const QRectF& area : areas) all.addRect(area);
  for (const QPainterPath& part : paths) all.addPath(part);
  return all;
}

QImage highlight_layer(const ElementShape& element, QSize size, qreal ratio,
                       const HaloStyle& style) {
  QImage layer((QSizeF(size) * ratio).toSize(), QImage::Format_ARGB32_Premultiplied);
  layer.setDevicePixelRatio(ratio);
  layer.fill(style.dim);
  if (element.empty() || layer.isNull()) return layer;
  // In device pixels: a line `line` wide runs `gap` outside the element's edge; the element
  // itself stays as painted (an outline never covers what it points at), the rest is dimmed.
  const float gap = static_cast<float>(style.gap * ratio);
  const float line = static_cast<float>(std::max(2.0, style.width / 4) * ratio);
  const int cap = static_cast<int>(std::ceil(gap + line)) + 2;
  const QRectF bounds = element.bounds();
  const QRect box = QRectF(bounds.topLeft() * ratio, bounds.size() * ratio)
                        .toAlignedRect()
                        .adjusted(-cap, -cap, cap, cap) &
                    layer.rect();
  if (box.isEmpty()) return layer;
  const std::vector<uint8_t> inside = coverage(element, box, ratio);
  const std::vector<float> distance = distances_across_edge(inside, box.width(), box.height(), cap);
  const float middle = gap + line / 2;
  for (int y = 0; y < box.height(); ++y) {
    auto* row = reinterpret_cast<QRgb*>(layer.scanLine(box.top() + y)) + box.left();
    for (int x = 0; x < box.width(); ++x) {
      const size_t at = size_t(y) * box.width() + x;
      if (inside[at]) {
        row[x] = qRgba(0, 0, 0, 0);
        continue;
      }
      // Distance from the edge (half a pixel between the last pixel in and the first out).
      const float s = distance[at] - 0.5f;
      if (s > gap + line + 1) continue;  // dimmed like the rest of the layer
      const float edge = clamp01(line / 2 + 0.5f - std::abs(s - middle));
      row[x] = Premultiplied::of(style.edge, edge).over(Premultiplied::of(style.dim, 1.0f)).rgb();
    }
  }
  return layer;
}

}  // namespace servescope::widgets
