#include "app/gui/recording/replay_player.h"

#include <QTimer>
#include <algorithm>

#include "app/gui/engine_bridge/engine_client.h"

namespace servescope::gui {
namespace {

constexpr int kTickMs = 16;

// One event per record, each at its batch's time, so a single step can stop between records.
std::vector<TraceEvent> one_record_each(std::vector<TraceEvent> events) {
  std::vector<TraceEvent> out;
  out.reserve(events.size());
  for (TraceEvent& event : events) {
    if (auto* batch = std::get_if<trace::Telemetry>(&event.body)) {
      for (telemetry::TelemetryItem& item : batch->items) {
        out.push_back({event.ms, trace::Telemetry{{std::move(item)}}});
      }
    } else {
      out.push_back(std::move(event));
    }
  }
  return out;
}

bool is_step(const TraceEvent& event) {
  const auto* batch = std::get_if<trace::Telemetry>(&event.body);
  return batch != nullptr && !batch->items.empty() &&
         std::holds_alternative<telemetry::StepRecord>(batch->items.front());
}

}  // namespace

ReplayPlayer::ReplayPlayer(Trace trace, EngineClient& engine, QObject* parent)
    : EngineReplies(parent),
      header_(std::move(trace.header)),
      events_(one_record_each(std::move(trace.events))),
      timer_(new QTimer(this)) {
  // The run starts with its engine: a lesson step shown before it plays at the start too, and
  // a seek to 0 always rebuilds the window from the engine's reset.
  start_ = first_engine_event().ms;
  position_ = start_;
  queue_capacity_ = std::max<size_t>(1, events_.size());
  // The window hears the engine client; the client says what the recording says (the replies
  // a recording holds: the trace's engine events).
  using R = EngineReplies;
  relay(this, &engine, &R::engine_ready, &R::memory_measured, &R::batch_sweep_point,
        &R::batch_sweep_ready, &R::batching_changed, &R::batch_collecting,
        &R::prompt_prefill_started, &R::generation_started, &R::sample_started,
        &R::generation_finished);
  timer_->setTimerType(Qt::PreciseTimer);
  connect(timer_, &QTimer::timeout, this, &ReplayPlayer::tick);
}

const TraceEvent& ReplayPlayer::first_engine_event() const {
  // read_trace refuses a trace without one.
  return *std::find_if(events_.begin(), events_.end(), [](const TraceEvent& e) {
    return std::holds_alternative<trace::Engine>(e.body);
  });
}

const EngineInfo& ReplayPlayer::first_engine() const {
  return std::get<trace::Engine>(first_engine_event().body).info;
}

double ReplayPlayer::duration_ms() const {
  return events_.empty() ? 0.0 : events_.back().ms - start_;
}

void ReplayPlayer::play() {
  if (at_end() || playing_) return;
  playing_ = true;
  since_tick_.start();
  timer_->start(kTickMs);
  play_until(position_);  // what is due now (the engine, at the start) without a tick's wait
  Q_EMIT moved();
}

void ReplayPlayer::pause() {
  if (!playing_) return;
  playing_ = false;
  timer_->stop();
  Q_EMIT moved();
}

void ReplayPlayer::set_speed(double factor) {
  speed_ = std::clamp(factor, kMinReplaySpeed, kMaxReplaySpeed);
}

void ReplayPlayer::step() {
  pause();
  while (!at_end()) {
    const bool was_step = is_step(events_[next_]);
    position_ = std::max(position_, events_[next_].ms);
    play_event(events_[next_++]);
    if (was_step) break;
  }
  Q_EMIT moved();
}

void ReplayPlayer::seek(double ms) {
  next_ = 0;
  steps_played_ = 0;
  position_ = start_ + std::clamp(ms, 0.0, duration_ms());
  play_until(position_);
  since_tick_.restart();
  Q_EMIT moved();
}

void ReplayPlayer::tick() {
  position_ += static_cast<double>(since_tick_.restart()) * speed_;
  play_until(position_);
  if (at_end()) {
    position_ = start_ + duration_ms();
    pause();  // says moved()
    return;
  }
  Q_EMIT moved();
}

void ReplayPlayer::play_until(double trace_ms) {
  while (!at_end() && events_[next_].ms <= trace_ms) play_event(events_[next_++]);
}

void ReplayPlayer::play_event(const TraceEvent& event) {
  std::visit(
      [this](const auto& e) {
        using E = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<E, trace::Engine>) {
          EngineInfo info = e.info;
          queue_ = std::make_shared<telemetry::TelemetryQueue>(queue_capacity_);
          info.telemetry = queue_;
          Q_EMIT engine_ready(info);
        } else if constexpr (std::is_same_v<E, trace::Telemetry>) {
          for (const telemetry::TelemetryItem& item : e.items) push(item);
        } else if constexpr (std::is_same_v<E, trace::Memory>) {
          Q_EMIT memory_measured(e.weights, e.kv_cache, e.working);
        } else if constexpr (std::is_same_v<E, trace::SweepPoint>) {
          Q_EMIT batch_sweep_point(e.point);
        } else if constexpr (std::is_same_v<E, trace::SweepDone>) {
          Q_EMIT batch_sweep_ready(e.points);
        } else if constexpr (std::is_same_v<E, trace::Batching>) {
          Q_EMIT batching_changed(e.choice);
        } else if constexpr (std::is_same_v<E, trace::Collecting>) {
          Q_EMIT batch_collecting(e.state);
        } else if constexpr (std::is_same_v<E, trace::PromptPrefill>) {
          Q_EMIT prompt_prefill_started(e.request);
        } else if constexpr (std::is_same_v<E, trace::GenerationStarted>) {
          Q_EMIT generation_started(e.request, e.prompt_tokens);
        } else if constexpr (std::is_same_v<E, trace::SampleStarted>) {
          Q_EMIT sample_started(e.request);
        } else if constexpr (std::is_same_v<E, trace::GenerationFinished>) {
          Q_EMIT generation_finished(e.end);
        } else {
          static_assert(std::is_same_v<E, trace::LessonShown>);
          Q_EMIT lesson_shown(QString::fromStdString(e.lesson), QString::fromStdString(e.step));
        }
      },
      event.body);
}

void ReplayPlayer::push(const telemetry::TelemetryItem& item) {
  std::visit(
      [this](const auto& record) {
        using R = std::decay_t<decltype(record)>;
        if constexpr (std::is_same_v<R, telemetry::StepRecord>) {
          queue_->on_step(record);
          ++steps_played_;
        } else if constexpr (std::is_same_v<R, telemetry::RequestRecord>) {
          queue_->on_request(record);
        } else if constexpr (std::is_same_v<R, telemetry::KvEvent>) {
          queue_->on_kv_event(record);
        } else if constexpr (std::is_same_v<R, telemetry::TokenRecord>) {
          queue_->on_token(record);
        } else {
          static_assert(std::is_same_v<R, telemetry::RequestArrival>);
          queue_->on_arrival(record);
        }
      },
      item);
}

}  // namespace servescope::gui
