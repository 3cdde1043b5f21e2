// `servescope --record run.sstrace`: writes down what the window receives from its engine
// client (each frame's drained telemetry and the reports the panels depend on) with the
// window clock's time, on the GUI thread, as the window takes it in.
#pragma once

#include <QObject>
#include <functional>
#include <memory>
#include <span>

#include "app/gui/recording/trace_file.h"

namespace servescope::gui {

class EngineClient;

class TraceRecorder : public QObject {
  Q_OBJECT

 public:
  // Connects to the engine client's replies after the window did, so the window has taken each in
  // (and folded the telemetry it drains first) before it is written. now_ms: the window clock.
  TraceRecorder(EngineClient& engine, std::shared_ptr<TraceWriter> writer,
                std::function<double()> now_ms, QObject* parent);

  // One frame's drained records, at the window clock's time of the drain.
  void record_telemetry(std::span<const telemetry::TelemetryItem> items, double now_ms);
  // The Learn pane showed this lesson step (LearnPane::position_changed).
  void record_lesson(const QString& lesson, const QString& step);
  const TraceWriter& writer() const { return *writer_; }

 Q_SIGNALS:
  // The file could not be written (a full disk): the recording stopped there.
  void failed(const QString& message);

 private:
  void record(TraceBody body) { write(TraceEvent{now_ms_(), std::move(body)}); }
  void write(const TraceEvent& event);

  std::shared_ptr<TraceWriter> writer_;
  std::function<double()> now_ms_;
  bool stopped_ = false;
};

}  // namespace servescope::gui
