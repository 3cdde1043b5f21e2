// What remote mode knows of a real serving engine, folded from the session's reports (plain
// C++, as the telemetry folder is for the local engine): each request as the client timed it,
// and each poll of the server's /metrics and /slots with the client's own counts at that
// moment, so a chart can put "measured by ServeScope" beside "reported by the server" on one
// clock (the session's: ms since connecting). Bounded: the last kMaxPolls polls and
// kMaxRequests requests.
#pragma once

#include <QString>
#include <QUrl>
#include <cstdint>
#include <deque>
#include <optional>

#include "app/remote/remote_session.h"

namespace servescope::gui {

// A request as the client timed it: arrival = sent, each token's arrival as it came (the
// session's record once it ended), so TTFT and TPOT are telemetry/metrics.h's, as locally.
struct RemoteRequestState {
  telemetry::RequestRecord record;
  bool own = false;  // the user's
  bool ended = false;
};

// A poll of the server with what the client saw at the same moment.
struct RemotePollPoint {
  double at_ms = 0.0;
  int64_t streams_open = 0;      // sent and not ended (measured)
  int64_t tokens_received = 0;   // since connecting (measured)
  std::optional<remote::ServerMetrics> metrics;  // reported
  std::optional<remote::SlotsReport> slots;      // reported
};

class RemoteFolder {
 public:
  static constexpr size_t kMaxPolls = 3000;  // five minutes at 100 ms
  static constexpr size_t kMaxRequests = 200;

  // A new connection: everything before it is forgotten.
  void reset(const remote::ServerIdentity& server);
  void on_sent(int64_t request, bool own, double at_ms);
  void on_token(const remote::RemoteToken& token);
  void on_end(const remote::RemoteRequestEnd& end);
  void on_poll(const remote::ServerPoll& poll);
  void on_metrics_problem(const QString& problem) {
    metrics_problem_ = problem;
    ++revision_;
  }

  const remote::ServerIdentity& server() const { return server_; }
  // "llama.cpp" or "vLLM" once /metrics said, else empty.
  QString server_kind() const;
  const std::deque<RemotePollPoint>& polls() const { return polls_; }
  // The server's first report since connecting (the polls keep only the latest kMaxPolls).
  const std::optional<remote::ServerMetrics>& first_metrics() const { return first_metrics_; }
  const std::deque<RemoteRequestState>& requests() const { return requests_; }
  int64_t requests_sent() const { return requests_sent_; }  // since connecting
  int64_t streams_open() const { return streams_open_; }
  int64_t tokens_received() const { return tokens_received_; }
  const QString& metrics_problem() const { return metrics_problem_; }
  // Grows with every report folded: the panels are due a new view.
  uint64_t revision() const { return revision_; }

 private:
  RemoteRequestState* find(int64_t request);

  remote::ServerIdentity server_;
  std::deque<RemotePollPoint> polls_;
  std::optional<remote::ServerMetrics> first_metrics_;
  std::deque<RemoteRequestState> requests_;
  int64_t requests_sent_ = 0;
  int64_t streams_open_ = 0;
  int64_t tokens_received_ = 0;
  QString metrics_problem_;
  uint64_t revision_ = 0;
};

}  // namespace servescope::gui
