// Server-sent events as OpenAI-compatible servers stream a completion: lines "data: <json>",
// an empty line ending each event, "data: [DONE]" ending the stream. Bytes arrive in arbitrary
// pieces (a network read can end mid-line); the parser keeps what it has not seen end.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace servescope::remote {

class SseParser {
 public:
  // The data of every event the bytes complete, in order (an event's data lines joined with
  // '\n', as the SSE specification says); comments (":") and other fields are skipped. Once
  // "[DONE]" came, later bytes are ignored.
  std::vector<std::string> feed(std::string_view bytes);
  // "data: [DONE]" was seen: the server ended the stream as it should.
  bool done() const { return done_; }
  // Bytes of an event not yet ended by an empty line (a dropped stream leaves some).
  bool has_partial_event() const { return !line_.empty() || !data_.empty(); }

 private:
  void take_line(std::string_view line, std::vector<std::string>& events);

  std::string line_;  // the current line, not yet ended
  std::string data_;  // the current event's data so far
  bool has_data_ = false;
  bool done_ = false;
};

}  // namespace servescope::remote
