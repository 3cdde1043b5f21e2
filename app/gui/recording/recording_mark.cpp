#include "app/gui/recording/recording_mark.h"

#include <QPainter>
#include <QTimer>

#include "app/gui/recording/trace_file.h"
#include "app/gui/window/window_text.h"
#include "widgets/theme.h"

namespace servescope::gui {
namespace {

constexpr int kRefreshMs = 1000;
constexpr int kMargin = 8;

}  // namespace

QString recording_text(const QString& file_name, uint64_t bytes) {
  return RecordingMark::tr("Recording to %1, %2").arg(file_name, format_bytes(bytes));
}

RecordingMark::RecordingMark(std::shared_ptr<const TraceWriter> writer, QWidget* parent)
    : QWidget(parent), writer_(std::move(writer)), timer_(new QTimer(this)) {
  setObjectName("recording-mark");
  setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Fixed);
  setToolTip(tr("Everything the panels receive is written to %1 for --replay")
                 .arg(QString::fromStdString(writer_->path().string())));
  connect(timer_, &QTimer::timeout, this, &RecordingMark::refresh);
  timer_->start(kRefreshMs);
  refresh();
}

void RecordingMark::stop(const QString& reason) {
  stopped_ = true;
  timer_->stop();
  text_ = reason;
  setAccessibleName(text_);  // painted text: a screen reader has only this
  updateGeometry();
  update();
}

void RecordingMark::refresh() {
  const QString file = QString::fromStdString(writer_->path().filename().string());
  const QString text = recording_text(file, writer_->bytes_written());
  if (text == text_) return;
  text_ = text;
  setAccessibleName(text_);
  updateGeometry();
  update();
}

int RecordingMark::dot_diameter() const { return fontMetrics().ascent() * 2 / 3; }

QSize RecordingMark::sizeHint() const {
  const QFontMetrics metrics = fontMetrics();
  return {kMargin + dot_diameter() + metrics.averageCharWidth() +
              metrics.horizontalAdvance(text_) + kMargin,
          metrics.height() + kMargin};
}

void RecordingMark::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.setRenderHint(QPainter::Antialiasing);
  const int diameter = dot_diameter();
  const QRectF dot(kMargin, (height() - diameter) / 2.0, diameter, diameter);
  // A recording light's red (at least 3:1 on either theme's background, as a shape needs);
  // hollow once the recording stopped.
  const QColor red = widgets::theme().kind == widgets::ThemeKind::kDark ? QColor(0xFF5C5C)
                                                                        : QColor(0xC8102E);
  painter.setPen(QPen(red, 2));
  painter.setBrush(stopped_ ? Qt::NoBrush : QBrush(red));
  painter.drawEllipse(dot);
  painter.setPen(palette().color(QPalette::WindowText));
  const int text_left = kMargin + diameter + fontMetrics().averageCharWidth();
  painter.drawText(QRect(text_left, 0, width() - text_left, height()),
                   Qt::AlignLeft | Qt::AlignVCenter, text_);
}

}  // namespace servescope::gui
