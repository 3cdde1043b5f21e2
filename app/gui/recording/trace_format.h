// A recorded run (`servescope --record run.sstrace`): what the window received from its engine,
// with the window clock's time of each arrival, so `servescope --replay` can play it into the
// same panels with no engine. The format, version 4, is JSON lines in UTF-8, each line ended
// by '\n':
//
//   line 1   {"format":"servescope-trace","version":4,"recorded_at":"2026-12-06T16:20:00Z"}
//   then     one event per line: {"ms":1234.5,"kind":KIND,...}, ms non-decreasing; an engine
//            event before any other but a lesson (which the Learn pane may show before a model)
//   last     {"end":true,"events":N}   (N events above it; a file without it is cut short)
//
// KIND and its fields (every struct's fields are named as in its C++ struct):
//   engine               "info": EngineInfo without its pointers (a model was loaded)
//   telemetry            "items": [{"step":StepRecord} | {"request":RequestRecord} |
//                                  {"kv":KvEvent} | {"token":TokenRecord} |
//                                  {"arrival":RequestArrival} (version 3)], as one frame drained
//   memory               "weights", "kv_cache", "working": device memory by purpose, bytes
//   sweep_point          "point": BatchSweepPoint (one size of a batch sweep measured)
//   sweep_done           "points": [BatchSweepPoint] (the sweep ended)
//   batching             "choice": BatchingChoice (the policy the engine now runs)
//   collecting           "state": BatchCollecting (a static batch collecting, or done)
//   prompt_prefill       "request": the typed prompt prefilled ahead of Generate (version 2)
//   generation_started   "request", "prompt_tokens"
//   sample_started       "request": a further sample of the user's prompt (version 4)
//   generation_finished  "reason"
//   lesson               "lesson", "step": the Learn pane's lesson and step ids, as it showed one
// Enums are written by name ("decode", "allocate", "Q8_0"); a number that is not finite is
// written as "inf", "-inf" or "nan". A reader ignores fields it does not know (a later minor
// addition) and refuses a missing one; a new kind or a changed meaning raises the version.
// Version 1 lacked prompt_prefill (its replays show the typed prompt's prefill as a classmate's);
// versions 1 and 2 lack arrivals (a request's queued stretch appears when it finishes).
// Version 4 added samples sharing a prompt: sample_started and the KV event kinds "fork" and
// "copy_on_write".
// A BatchEntry's longest_tokens is not recorded: a replay's KV panel says the reservation
// comparison is not known.
#pragma once

#include <QVector>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "app/gui/engine_bridge/engine_types.h"
#include "app/gui/engine_bridge/generation_end.h"

namespace servescope::gui {

inline constexpr std::string_view kTraceFormat = "servescope-trace";
inline constexpr int kTraceVersion = 4;

// A replay's speed, times the recorded pace.
inline constexpr double kMinReplaySpeed = 0.1;
inline constexpr double kMaxReplaySpeed = 16.0;

// A line that is not what the format says; the message names the field at fault. The reader
// adds the file, line and byte offset.
class TraceFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TraceHeader {
  int version = kTraceVersion;
  std::string recorded_at;  // ISO 8601, UTC
};

namespace trace {
struct Engine {
  EngineInfo info;  // tokenizer, telemetry queue and attention mailbox left empty
};
struct Telemetry {
  std::vector<telemetry::TelemetryItem> items;
};
struct Memory {
  uint64_t weights = 0;
  uint64_t kv_cache = 0;
  uint64_t working = 0;
};
struct SweepPoint {
  BatchSweepPoint point;
};
struct SweepDone {
  QVector<BatchSweepPoint> points;
};
struct Batching {
  BatchingChoice choice;
};
struct Collecting {
  BatchCollecting state;
};
struct PromptPrefill {
  int64_t request = 0;
};
struct GenerationStarted {
  int64_t request = 0;
  int prompt_tokens = 0;
};
struct SampleStarted {
  int64_t request = 0;
};
struct GenerationFinished {
  GenerationEnd end;  // stored by its name (generation_end_name)
};
struct LessonShown {
  std::string lesson;  // ids, as in the lesson files
  std::string step;
};
}  // namespace trace

using TraceBody =
    std::variant<trace::Engine, trace::Telemetry, trace::Memory, trace::SweepPoint,
                 trace::SweepDone, trace::Batching, trace::Collecting, trace::PromptPrefill,
                 trace::GenerationStarted, trace::SampleStarted, trace::GenerationFinished,
                 trace::LessonShown>;

struct TraceEvent {
  double ms = 0.0;  // the recording window's clock when it arrived
  TraceBody body;
};

// One line each, without its '\n'.
std::string encode_header(const TraceHeader& header);
std::string encode_event(const TraceEvent& event);
std::string encode_end(int64_t events);

// TraceFormatError saying what is wrong with the line.
TraceHeader decode_header(std::string_view line);
TraceEvent decode_event(std::string_view line);
// The event count of an end line, or nullopt for a line that is not one.
std::optional<int64_t> decode_end(std::string_view line);

}  // namespace servescope::gui
