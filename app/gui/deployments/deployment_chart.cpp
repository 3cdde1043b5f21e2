#include "app/gui/deployments/deployment_chart.h"

#include <QPainter>
#include <algorithm>

#include "widgets/chart_painting.h"
#include "widgets/theme.h"

namespace servescope::gui {

DeploymentChart::DeploymentChart(QWidget* parent) : QWidget(parent) {
  setAccessibleName(tr("Tokens per second at batch 1 per device"));
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

void DeploymentChart::set_rows(const std::vector<DeploymentRow>& rows) {
  bars_.clear();
  for (const DeploymentRow& row : rows) {
    bars_.push_back({QString::fromStdString(row.device.name),
                     tokens_per_second_ceiling(row.figures), row.measured_here});
  }
  updateGeometry();
  update();
}

QSize DeploymentChart::sizeHint() const {
  const int line = fontMetrics().height() + 6;
  return {480, line * (static_cast<int>(bars_.size()) + 1) + 8};
}

void DeploymentChart::paintEvent(QPaintEvent* /*event*/) {
  const widgets::Theme& theme = widgets::theme();
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.fillRect(rect(), theme.surface);
  const QFontMetrics metrics = fontMetrics();
  const int line = metrics.height() + 6;
  p.setPen(theme.text);
  p.drawText(QRect(6, 2, width() - 12, line), Qt::AlignLeft | Qt::AlignVCenter,
             tr("Ceiling of one request's decode, tokens per second (computed; this machine's "
                "from its measured roofs)"));
  if (bars_.empty()) return;
  int label_width = 0;
  for (const Bar& bar : bars_)
    label_width = std::max(label_width, metrics.horizontalAdvance(bar.label));
  const double most = std::max_element(bars_.begin(), bars_.end(), [](const Bar& a, const Bar& b) {
                        return a.tokens_per_s < b.tokens_per_s;
                      })->tokens_per_s;
  const int value_width = metrics.horizontalAdvance(QStringLiteral("00000 tokens/s"));
  const double span = std::max(1, width() - label_width - value_width - 30);
  for (size_t i = 0; i < bars_.size(); ++i) {
    const Bar& bar = bars_[i];
    const int top = line * static_cast<int>(i + 1) + 4;
    p.setPen(theme.text);
    p.drawText(QRect(6, top, label_width, line), Qt::AlignRight | Qt::AlignVCenter, bar.label);
    const double length = most > 0.0 ? span * bar.tokens_per_s / most : 0.0;
    const QRectF shape(label_width + 14, top + 3, std::max(1.0, length), line - 6);
    p.fillRect(shape, bar.measured_here ? theme.highlight : theme.decode);
    p.setPen(theme.text);
    p.drawText(QRectF(shape.right() + 6, top, value_width + 10, line),
               Qt::AlignLeft | Qt::AlignVCenter,
               tr("%1 tokens/s").arg(widgets::chart::format_number(bar.tokens_per_s)));
  }
}

}  // namespace servescope::gui
