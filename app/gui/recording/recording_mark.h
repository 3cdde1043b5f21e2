// What a lecturer must see while `servescope --record FILE` runs: a mark above the panels (the
// status bar is hidden in lecture mode; the panels' column is not) that says "Recording to
// run.sstrace, 1.2 MiB" with the size growing as the run is written, or that the recording
// stopped and why.
#pragma once

#include <QString>
#include <QWidget>
#include <memory>

class QTimer;

namespace servescope::gui {

class TraceWriter;

class RecordingMark : public QWidget {
  Q_OBJECT

 public:
  RecordingMark(std::shared_ptr<const TraceWriter> writer, QWidget* parent = nullptr);

  QString text() const { return text_; }
  // The recording could not go on (a full disk): the mark says so, and no longer grows.
  void stop(const QString& reason);

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override { return sizeHint(); }

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  void refresh();
  int dot_diameter() const;

  std::shared_ptr<const TraceWriter> writer_;
  QTimer* timer_;
  QString text_;
  bool stopped_ = false;
};

// "Recording to run.sstrace, 1.2 MiB".
QString recording_text(const QString& file_name, uint64_t bytes);

}  // namespace servescope::gui
