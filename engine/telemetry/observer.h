// How telemetry leaves the engine: an Observer receives every record, and TelemetryQueue is
// the observer to use across threads. The engine calls the observer on its own thread and must
// never wait for a consumer (a GUI repaint, a slow terminal), so the queue only ever holds its
// lock for a push or a swap, and drops its oldest record when the consumer falls behind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <variant>
#include <vector>

#include "engine/telemetry/kv_event.h"
#include "engine/telemetry/records.h"

namespace servescope::telemetry {

class Observer {
 public:
  virtual ~Observer() = default;
  virtual void on_step(const StepRecord& step) = 0;
  virtual void on_request(const RequestRecord& request) = 0;
  virtual void on_kv_event(const KvEvent& event) = 0;
  // Only for requests that asked for token probabilities (EngineRequest::top_k_alternatives).
  virtual void on_token(const TokenRecord& /*token*/) {}
  virtual void on_arrival(const RequestArrival& /*arrival*/) {}
};

using TelemetryItem = std::variant<StepRecord, RequestRecord, KvEvent, TokenRecord, RequestArrival>;

// A bounded multi-producer queue: producers push (never block beyond a short lock), one
// consumer drains everything pushed so far.
class TelemetryQueue final : public Observer {
 public:
  explicit TelemetryQueue(size_t capacity = 4096);

  void on_step(const StepRecord& step) override { push(step); }
  void on_request(const RequestRecord& request) override { push(request); }
  void on_kv_event(const KvEvent& event) override { push(event); }
  void on_token(const TokenRecord& token) override { push(token); }
  void on_arrival(const RequestArrival& arrival) override { push(arrival); }

  // Everything pushed since the last drain, oldest first.
  std::vector<TelemetryItem> drain();
  // Records dropped because the queue was full, since construction.
  uint64_t dropped() const;
  size_t capacity() const { return capacity_; }

 private:
  void push(TelemetryItem item);

  const size_t capacity_;
  mutable std::mutex mutex_;
  std::deque<TelemetryItem> items_;
  uint64_t dropped_ = 0;
};

}  // namespace servescope::telemetry
