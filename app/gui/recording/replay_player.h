// `servescope --replay run.sstrace`: plays a recorded run into the window with no engine. The
// player speaks through the engine client's own reply signals (forwarded, direct) and pushes
// the records into a telemetry queue the window drains on its frame timer, so a replay takes
// exactly the path of a live run into the folder and the panels; no model is loaded.
// Pause, single step (one engine step) and seek (the window's state rebuilt by playing from the
// start up to the time: folding is deterministic, so the panels are those of the live run then).
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <memory>

#include "app/gui/engine_bridge/engine_replies.h"
#include "app/gui/recording/trace_file.h"

class QTimer;

namespace servescope::gui {

class EngineClient;

// The recorded replies go out as the player's own EngineReplies signals, relayed to the client.
class ReplayPlayer : public EngineReplies {
  Q_OBJECT

 public:
  // Paused at the start, before the recorded engine appears; play() begins.
  ReplayPlayer(Trace trace, EngineClient& engine, QObject* parent);

  const TraceHeader& header() const { return header_; }
  // The run's first engine (its model and device), for the "Replay of ..." banner. The trace
  // must hold one (read_trace makes sure).
  const EngineInfo& first_engine() const;
  // From the first engine event to the last event, and where the replay is, in the run's
  // milliseconds.
  double duration_ms() const;
  double position_ms() const { return position_ - start_; }
  bool playing() const { return playing_; }
  bool at_end() const { return next_ >= events_.size(); }
  double speed() const { return speed_; }
  // Engine steps played so far (since the last seek's start).
  int64_t steps_played() const { return steps_played_; }

  void play();
  void pause();
  void set_speed(double factor);  // clamped to kMinReplaySpeed .. kMaxReplaySpeed
  // Pauses, then plays up to and including the next engine step.
  void step();
  // Plays from the start up to `ms` of the run (clamped), keeping playing or paused.
  void seek(double ms);

 Q_SIGNALS:
  // The Learn pane showed this lesson step in the recorded run (ids).
  void lesson_shown(const QString& lesson, const QString& step);
  // The position or the play / pause state changed.
  void moved();

 private:
  const TraceEvent& first_engine_event() const;
  void tick();
  void play_until(double trace_ms);
  void play_event(const TraceEvent& event);
  void push(const telemetry::TelemetryItem& item);

  TraceHeader header_;
  std::vector<TraceEvent> events_;  // a telemetry event holds one record each
  size_t next_ = 0;
  double start_ = 0.0;     // the first engine event's time: the run's 0
  double position_ = 0.0;  // the run's time played up to
  double speed_ = 1.0;
  bool playing_ = false;
  int64_t steps_played_ = 0;
  size_t queue_capacity_ = 1;  // every record of the run: a seek's burst drops none
  std::shared_ptr<telemetry::TelemetryQueue> queue_;  // the current engine's
  QTimer* timer_;
  QElapsedTimer since_tick_;
};

}  // namespace servescope::gui
