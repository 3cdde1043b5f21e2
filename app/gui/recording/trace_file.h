// Writing and reading a recorded run's file (the format: trace_format.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/gui/recording/trace_format.h"

namespace servescope::gui {

// A file that cannot be written, or read as a trace: one line naming the file and, for a bad
// line, its number and byte offset.
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Appends events to a new trace file, each line flushed as it is written, so a run that ends
// abruptly leaves every event before it on disk. The end line is written by finish() (or the
// destructor); a file without it reads as cut short.
class TraceWriter {
 public:
  // Creates (or replaces) the file and writes its header. TraceError when it cannot.
  TraceWriter(const std::filesystem::path& path, const TraceHeader& header);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // TraceError when the line cannot be written (a full disk): the recording stops there.
  void write(const TraceEvent& event);
  void finish();
  const std::filesystem::path& path() const { return path_; }
  int64_t events() const { return events_; }
  // The file's size so far (header and events; every line is flushed as it is written).
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  void write_line(const std::string& line);

  std::filesystem::path path_;
  std::ofstream out_;
  int64_t events_ = 0;
  uint64_t bytes_written_ = 0;
  double last_ms_ = 0.0;
  bool finished_ = false;
};

struct Trace {
  TraceHeader header;
  // ms non-decreasing; an engine event comes before every event but a lesson step's
  std::vector<TraceEvent> events;
};

// The largest trace read (a lesson's run is a few MB).
inline constexpr uint64_t kMaxTraceBytes = uint64_t{1} << 30;

// The whole file, checked line by line. TraceError: "run.sstrace: line 12 (byte 4242): ..."
Trace read_trace(const std::filesystem::path& path);
// The same check of a file's bytes; `name` begins each error.
Trace parse_trace(const std::string& bytes, const std::string& name);

// The current time as the header's recorded_at: "2026-12-06T16:20:00Z".
std::string trace_time_now();

}  // namespace servescope::gui
