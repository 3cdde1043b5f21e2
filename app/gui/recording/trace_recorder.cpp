#include "app/gui/recording/trace_recorder.h"

#include "app/gui/engine_bridge/engine_client.h"

namespace servescope::gui {

TraceRecorder::TraceRecorder(EngineClient& engine, std::shared_ptr<TraceWriter> writer,
                             std::function<double()> now_ms, QObject* parent)
    : QObject(parent), writer_(std::move(writer)), now_ms_(std::move(now_ms)) {
  connect(&engine, &EngineClient::engine_ready, this, [this](EngineInfo info) {
    info.tokenizer.reset();  // the pointers are this process's, not the run's
    info.telemetry.reset();
    info.attention.reset();
    record(trace::Engine{std::move(info)});
  });
  connect(&engine, &EngineClient::memory_measured, this,
          [this](quint64 weights, quint64 kv_cache, quint64 working) {
            record(trace::Memory{weights, kv_cache, working});
          });
  connect(&engine, &EngineClient::batch_sweep_point, this,
          [this](const BatchSweepPoint& point) { record(trace::SweepPoint{point}); });
  connect(&engine, &EngineClient::batch_sweep_ready, this,
          [this](const QVector<BatchSweepPoint>& points) { record(trace::SweepDone{points}); });
  connect(&engine, &EngineClient::batching_changed, this,
          [this](const BatchingChoice& choice) { record(trace::Batching{choice}); });
  connect(&engine, &EngineClient::batch_collecting, this,
          [this](const BatchCollecting& state) { record(trace::Collecting{state}); });
  connect(&engine, &EngineClient::prompt_prefill_started, this,
          [this](qint64 request) { record(trace::PromptPrefill{request}); });
  connect(&engine, &EngineClient::generation_started, this, [this](qint64 request, int tokens) {
    record(trace::GenerationStarted{request, tokens});
  });
  connect(&engine, &EngineClient::sample_started, this,
          [this](qint64 request) { record(trace::SampleStarted{request}); });
  connect(&engine, &EngineClient::generation_finished, this, [this](GenerationEnd end) {
    record(trace::GenerationFinished{end});
  });
}

void TraceRecorder::record_telemetry(std::span<const telemetry::TelemetryItem> items,
                                     double now_ms) {
  if (items.empty()) return;
  write(TraceEvent{now_ms, trace::Telemetry{{items.begin(), items.end()}}});
}

void TraceRecorder::record_lesson(const QString& lesson, const QString& step) {
  record(trace::LessonShown{lesson.toStdString(), step.toStdString()});
}

void TraceRecorder::write(const TraceEvent& event) {
  if (stopped_) return;
  try {
    writer_->write(event);
  } catch (const TraceError& error) {
    stopped_ = true;
    Q_EMIT failed(QString("Recording stopped: %1").arg(QString::fromStdString(error.what())));
  }
}

}  // namespace servescope::gui
