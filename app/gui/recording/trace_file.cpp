#include "app/gui/recording/trace_file.h"

#include <QDateTime>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <system_error>

namespace servescope::gui {
namespace {

std::string file_name(const std::filesystem::path& path) { return path.string(); }

std::string read_all(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) throw TraceError(file_name(path) + ": no such file");
  if (!std::filesystem::is_regular_file(path, error)) {
    throw TraceError(file_name(path) + ": not a file");
  }
  const uint64_t size = std::filesystem::file_size(path, error);
  if (error) throw TraceError(file_name(path) + ": " + error.message());
  if (size > kMaxTraceBytes) {
    throw TraceError(file_name(path) + ": " + std::to_string(size) +
                     " bytes, more than the 1 GiB a trace may hold");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(file_name(path) + ": cannot be read: " + std::strerror(errno));
  std::string bytes(static_cast<size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (in.gcount() != static_cast<std::streamsize>(size)) {
    throw TraceError(file_name(path) + ": could not be read to its end");
  }
  return bytes;
}

// Walks a file's lines, each with its number and the byte offset it starts at.
class Lines {
 public:
  explicit Lines(const std::string& bytes) : bytes_(bytes) {}
  bool done() const { return start_ >= bytes_.size(); }
  // The next line without its '\n'; `ended` false when the file stops before one.
  std::string_view next(bool& ended) {
    line_start_ = start_;
    ++number_;
    const size_t end = bytes_.find('\n', start_);
    ended = end != std::string::npos;
    const size_t stop = ended ? end : bytes_.size();
    start_ = ended ? end + 1 : bytes_.size();
    return std::string_view(bytes_).substr(line_start_, stop - line_start_);
  }
  int64_t number() const { return number_; }
  size_t offset() const { return line_start_; }

 private:
  const std::string& bytes_;
  size_t start_ = 0;
  size_t line_start_ = 0;
  int64_t number_ = 0;
};

bool is_end_line(std::string_view line) { return line.starts_with("{\"end\""); }

}  // namespace

// --- writing ------------------------------------------------------------------------------------

TraceWriter::TraceWriter(const std::filesystem::path& path, const TraceHeader& header)
    : path_(path), out_(path, std::ios::binary | std::ios::trunc) {
  if (!out_) throw TraceError(file_name(path) + ": cannot be written: " + std::strerror(errno));
  write_line(encode_header(header));
}

TraceWriter::~TraceWriter() {
  try {
    finish();
  } catch (const TraceError&) {
    // Nothing to tell from a destructor; the file then reads as cut short.
  }
}

void TraceWriter::write(const TraceEvent& event) {
  if (finished_) return;
  TraceEvent in_order = event;
  // The window's clock is monotonic; held to it anyway, as the reader requires.
  in_order.ms = std::max(event.ms, last_ms_);
  last_ms_ = in_order.ms;
  write_line(encode_event(in_order));
  ++events_;
}

void TraceWriter::finish() {
  if (finished_) return;
  finished_ = true;
  write_line(encode_end(events_));
  out_.close();
}

void TraceWriter::write_line(const std::string& line) {
  out_ << line << '\n';
  out_.flush();
  if (!out_) {
    finished_ = true;
    throw TraceError(file_name(path_) + ": cannot be written (is the disk full?)");
  }
  bytes_written_ += line.size() + 1;
}

// --- reading ------------------------------------------------------------------------------------

Trace read_trace(const std::filesystem::path& path) {
  return parse_trace(read_all(path), file_name(path));
}

Trace parse_trace(const std::string& bytes, const std::string& name) {
  if (bytes.empty()) throw TraceError(name + ": empty, not a ServeScope trace");
  Lines lines(bytes);
  const auto fail = [&](const std::string& what) -> TraceError {
    return TraceError(name + ": line " + std::to_string(lines.number()) + " (byte " +
                      std::to_string(lines.offset()) + "): " + what);
  };
  Trace trace;
  std::optional<int64_t> end_count;
  bool seen_engine = false;
  while (!lines.done()) {
    bool ended = false;
    const std::string_view line = lines.next(ended);
    if (end_count) throw fail("text after the end line");
    const auto cut_short = [&] {
      return fail("cut short (the line has no end; the recording did not finish)");
    };
    if (!ended && lines.number() > 1) throw cut_short();  // a header cut short is not a trace
    try {
      if (lines.number() == 1) {
        trace.header = decode_header(line);
      } else if (is_end_line(line)) {
        end_count = decode_end(line);
      } else {
        TraceEvent event = decode_event(line);
        seen_engine = seen_engine || std::holds_alternative<trace::Engine>(event.body);
        if (!seen_engine && !std::holds_alternative<trace::LessonShown>(event.body)) {
          throw TraceFormatError(
              "an engine's report before any engine event (its model, device, ...)");
        }
        if (!trace.events.empty() && event.ms < trace.events.back().ms) {
          throw TraceFormatError("event.ms: " + std::to_string(event.ms) +
                                 " goes back in time (the one before is at " +
                                 std::to_string(trace.events.back().ms) + ")");
        }
        trace.events.push_back(std::move(event));
      }
    } catch (const TraceFormatError& error) {
      throw fail(error.what());
    }
    if (!ended) throw cut_short();
  }
  if (!end_count) {
    throw TraceError(name + ": cut short after line " +
                     std::to_string(lines.number()) +
                     " (no end line: the recording did not finish)");
  }
  if (*end_count != static_cast<int64_t>(trace.events.size())) {
    throw TraceError(name + ": the end line counts " + std::to_string(*end_count) +
                     " events, the file holds " + std::to_string(trace.events.size()));
  }
  if (!seen_engine) {
    throw TraceError(name + ": holds no run (no model was loaded while recording)");
  }
  return trace;
}

std::string trace_time_now() {
  return QDateTime::currentDateTimeUtc().toString(Qt::ISODate).toStdString();
}

}  // namespace servescope::gui
