#include "tests/widgets/text_probe.h"

#include <QAbstractScrollArea>
#include <QPaintDevice>
#include <QPaintEngine>
#include <QPainter>
#include <QWidget>
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

namespace servescope::widgets::testing {
namespace {

// A paint engine that draws nothing and remembers each text item.
class TextRecordingEngine : public QPaintEngine {
 public:
  explicit TextRecordingEngine(std::vector<PaintedText>& out)
      : QPaintEngine(QPaintEngine::AllFeatures), out_(out) {}

  bool begin(QPaintDevice*) override { return true; }
  bool end() override { return true; }
  void updateState(const QPaintEngineState&) override {}
  void drawPixmap(const QRectF&, const QPixmap&, const QRectF&) override {}
  void drawPath(const QPainterPath&) override {}
  void drawPolygon(const QPointF*, int, PolygonDrawMode) override {}
  Type type() const override { return QPaintEngine::User; }

  void drawTextItem(const QPointF& origin, const QTextItem& item) override {
    const QPainter* p = painter();
    // The engine's state carries the full matrix, a child widget's offset included.
    const QTransform to_device = state->transform();
    const QRectF ink(origin.x(), origin.y() - item.ascent(), item.width(),
                     item.ascent() + item.descent());
    PaintedText text;
    text.text = item.text();
    text.box = to_device.mapRect(ink);
    text.quad = to_device.map(QPolygonF(ink));
    text.color = p->pen().color();
    // A child widget is clipped to itself by the system clip, a scroll area's content to its
    // viewport; the painter's own clip narrows it further.
    if (!systemClip().isEmpty()) text.clip = QRectF(systemClip().boundingRect());
    if (p->hasClipping()) {
      const QRectF own = to_device.mapRect(p->clipBoundingRect());
      text.clip = text.clip ? text.clip->intersected(own) : own;
    }
    out_.push_back(std::move(text));
  }

 private:
  std::vector<PaintedText>& out_;
};

class TextRecordingDevice : public QPaintDevice {
 public:
  TextRecordingDevice(QSize size, std::vector<PaintedText>& out) : size_(size), engine_(out) {}
  QPaintEngine* paintEngine() const override { return &engine_; }

 protected:
  int metric(PaintDeviceMetric metric) const override {
    switch (metric) {
      case PdmWidth: return size_.width();
      case PdmHeight: return size_.height();
      case PdmDpiX: case PdmDpiY: case PdmPhysicalDpiX: case PdmPhysicalDpiY: return 96;
      case PdmDepth: return 32;
      case PdmNumColors: return INT_MAX;
      case PdmDevicePixelRatio: return 1;
      case PdmDevicePixelRatioScaled: return int(devicePixelRatioFScale());
      default: return QPaintDevice::metric(metric);
    }
  }

 private:
  QSize size_;
  mutable TextRecordingEngine engine_;
};

QString describe(const PaintedText& text) {
  const QRectF& b = text.box;
  return QStringLiteral("\"%1\" at (%2,%3 %4x%5)")
      .arg(text.text)
      .arg(b.x(), 0, 'f', 0)
      .arg(b.y(), 0, 'f', 0)
      .arg(b.width(), 0, 'f', 0)
      .arg(b.height(), 0, 'f', 0);
}

bool blank(const QString& text) { return text.trimmed().isEmpty(); }

// The part of a text's box its clip lets show.
QRectF visible(const PaintedText& text) { return text.clip ? text.box & *text.clip : text.box; }

// The quad moved `by` pixels towards its centre at each corner (the tolerance of a touch).
QPolygonF shrunk(const QPolygonF& quad, double by) {
  if (quad.size() < 4) return quad;
  QPointF centre;
  for (int i = 0; i < 4; ++i) centre += quad[i];
  centre /= 4;
  QPolygonF out;
  for (const QPointF& corner : quad) {
    const QPointF towards = centre - corner;
    const double length = std::hypot(towards.x(), towards.y());
    out << (length > 2 * by ? corner + towards * (by * 1.4142 / length) : corner);
  }
  return out;
}

double channel_luminance(int value) {
  const double c = value / 255.0;
  return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
}

double luminance(const QColor& color) {
  return 0.2126 * channel_luminance(color.red()) + 0.7152 * channel_luminance(color.green()) +
         0.0722 * channel_luminance(color.blue());
}

}  // namespace

std::vector<PaintedText> painted_texts(QWidget& widget) {
  std::vector<PaintedText> texts;
  TextRecordingDevice device(widget.size(), texts);
  widget.render(&device, QPoint(), QRegion(), QWidget::DrawChildren);
  std::vector<QRectF> viewports;
  for (const QAbstractScrollArea* area : widget.findChildren<QAbstractScrollArea*>()) {
    const QWidget* viewport = area->viewport();
    if (!viewport->isVisibleTo(&widget)) continue;
    viewports.emplace_back(QRectF(viewport->mapTo(&widget, QPoint(0, 0)), viewport->size()));
  }
  for (PaintedText& text : texts) {
    if (!text.clip) continue;
    for (const QRectF& viewport : viewports) {
      if (viewport.adjusted(-1, -1, 1, 1).contains(*text.clip)) text.scrolls = true;
    }
  }
  return texts;
}

std::vector<std::string> layout_faults(const std::vector<PaintedText>& texts, const QRectF& bounds,
                                       double tolerance) {
  std::vector<std::string> faults;
  auto fault = [&faults](const QString& line) { faults.push_back(line.toStdString()); };
  // A text wholly outside its clip is not on screen (a scrolled-away line): not a fault.
  const auto shown = [](const PaintedText& t) {
    return !blank(t.text) && (!t.clip || t.clip->intersects(t.box));
  };
  for (size_t i = 0; i < texts.size(); ++i) {
    const PaintedText& a = texts[i];
    if (!shown(a)) continue;
    const QRectF inner = visible(a).adjusted(tolerance, tolerance, -tolerance, -tolerance);
    if (a.text.contains(QChar(0x2026))) fault(QStringLiteral("elided: ") + describe(a));
    const QPolygonF corners = shrunk(a.quad, tolerance);
    const auto within = [&corners](const QRectF& area) {
      return std::all_of(corners.begin(), corners.end(),
                         [&area](const QPointF& p) { return area.contains(p); });
    };
    if (!within(bounds)) fault(QStringLiteral("outside the widget: ") + describe(a));
    if (a.clip && !a.scrolls && !within(*a.clip))
      fault(QStringLiteral("cut by its clip: ") + describe(a));
    for (size_t j = i + 1; j < texts.size(); ++j) {
      const PaintedText& b = texts[j];
      if (!shown(b)) continue;
      if (!inner.intersects(visible(b).adjusted(tolerance, tolerance, -tolerance, -tolerance)))
        continue;
      // Turned text (a roof's label along its slope) is judged by its own outline, not the
      // upright box around it.
      if (shrunk(a.quad, tolerance).intersects(shrunk(b.quad, tolerance)))
        fault(QStringLiteral("overlap: ") + describe(a) + QStringLiteral(" and ") + describe(b));
    }
  }
  return faults;
}

double contrast_ratio(const QColor& a, const QColor& b) {
  const double la = luminance(a), lb = luminance(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

std::vector<RenderedContrast> rendered_contrast(const QImage& image,
                                                const std::vector<PaintedText>& texts) {
  std::vector<RenderedContrast> out;
  const QImage rgb = image.convertToFormat(QImage::Format_RGB32);
  for (const PaintedText& text : texts) {
    if (blank(text.text) || (text.clip && !text.clip->intersects(text.box))) continue;
    const QRect box = text.box.toAlignedRect().intersected(rgb.rect());
    if (box.isEmpty()) continue;
    std::map<QRgb, int> counts;
    for (int y = box.top(); y <= box.bottom(); ++y)
      for (int x = box.left(); x <= box.right(); ++x) ++counts[rgb.pixel(x, y)];
    const QRgb background =
        std::max_element(counts.begin(), counts.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; })
            ->first;
    RenderedContrast result{text, QColor(background), QColor(background), 1.0};
    for (const auto& [pixel, count] : counts) {
      const double ratio = contrast_ratio(QColor(background), QColor(pixel));
      if (ratio > result.ratio) {
        result.ratio = ratio;
        result.ink = QColor(pixel);
      }
    }
    out.push_back(result);
  }
  return out;
}

}  // namespace servescope::widgets::testing
