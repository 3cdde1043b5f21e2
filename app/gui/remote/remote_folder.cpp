#include "app/gui/remote/remote_folder.h"

#include <algorithm>
#include <string>

namespace servescope::gui {

void RemoteFolder::reset(const remote::ServerIdentity& server) {
  *this = RemoteFolder();
  server_ = server;
  revision_ = 1;
}

QString RemoteFolder::server_kind() const {
  for (auto it = polls_.rbegin(); it != polls_.rend(); ++it) {
    if (it->metrics) {
      return QString::fromStdString(std::string(remote::server_kind_name(it->metrics->kind)));
    }
  }
  return {};
}

RemoteRequestState* RemoteFolder::find(int64_t request) {
  for (auto it = requests_.rbegin(); it != requests_.rend(); ++it) {
    if (it->record.request_id == request) return &*it;
  }
  return nullptr;
}

void RemoteFolder::on_sent(int64_t request, bool own, double at_ms) {
  RemoteRequestState state;
  state.record.request_id = request;
  state.record.arrival_ms = at_ms;
  state.own = own;
  requests_.push_back(std::move(state));
  // Forget the oldest that ended, but not the user's latest: the latency table keeps its row
  // among hundreds of classmates'. One still streaming stays however old.
  while (requests_.size() > kMaxRequests) {
    const RemoteRequestState* users_latest = nullptr;
    for (const RemoteRequestState& r : requests_) {
      if (r.own) users_latest = &r;
    }
    const auto oldest =
        std::find_if(requests_.begin(), requests_.end(), [users_latest](const RemoteRequestState& r) {
          return r.ended && &r != users_latest;
        });
    if (oldest == requests_.end()) break;
    requests_.erase(oldest);
  }
  ++requests_sent_;
  ++streams_open_;
  ++revision_;
}

void RemoteFolder::on_token(const remote::RemoteToken& token) {
  ++tokens_received_;
  ++revision_;
  RemoteRequestState* state = find(token.request);
  if (state != nullptr) state->record.token_times_ms.push_back(token.at_ms);
}

void RemoteFolder::on_end(const remote::RemoteRequestEnd& end) {
  --streams_open_;
  ++revision_;
  RemoteRequestState* state = find(end.record.request_id);
  if (state == nullptr) return;
  state->ended = true;
  state->record = end.record;  // the same times, and the server's prompt count and finish
}

void RemoteFolder::on_poll(const remote::ServerPoll& poll) {
  RemotePollPoint point;
  point.at_ms = poll.at_ms;
  point.streams_open = streams_open_;
  point.tokens_received = tokens_received_;
  point.metrics = poll.metrics;
  if (!first_metrics_) first_metrics_ = poll.metrics;
  point.slots = poll.slots;
  polls_.push_back(std::move(point));
  if (polls_.size() > kMaxPolls) polls_.pop_front();
  ++revision_;
}

}  // namespace servescope::gui
