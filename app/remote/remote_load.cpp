#include "app/remote/remote_load.h"

#include <QElapsedTimer>
#include <QEventLoop>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QTimer>
#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "app/remote/completion_stream.h"
#include "app/remote/sse_parser.h"

namespace servescope::remote {
namespace {

using nlohmann::json;

class Runner {
 public:
  Runner(const RemoteLoadOptions& options, const std::vector<serving::SimulatedRequest>& requests)
      : options_(options), requests_(requests) {
    result_.requests.resize(requests.size());
    network_.setTransferTimeout(static_cast<int>(options.timeout_s * 1000.0));
  }

  RemoteLoadResult run() {
    clock_.start();
    for (size_t i = 0; i < requests_.size(); ++i) {
      const auto due = static_cast<int>(std::max(0.0, requests_[i].arrival_ms));
      QTimer::singleShot(due, &loop_, [this, i] { send(i); });
    }
    if (options_.poll_metrics) {
      poll_timer_.setInterval(static_cast<int>(options_.metrics_poll_ms));
      QObject::connect(&poll_timer_, &QTimer::timeout, &loop_, [this] { poll_metrics(); });
      poll_metrics();
      poll_timer_.start();
    }
    if (!requests_.empty()) loop_.exec();
    poll_timer_.stop();
    if (options_.poll_metrics && result_.ok() && result_.server.metrics_problem.empty()) {
      poll_metrics_now();  // the counters after the last request
    }
    double first_sent = 0.0, last_token = 0.0;
    bool any = false;
    for (const RemoteRequestResult& r : result_.requests) {
      if (r.record.token_times_ms.empty()) continue;
      first_sent = any ? std::min(first_sent, r.record.arrival_ms) : r.record.arrival_ms;
      last_token = std::max(last_token, r.record.token_times_ms.back());
      any = true;
    }
    result_.wall_ms = any ? last_token - first_sent : 0.0;
    return std::move(result_);
  }

 private:
  double now_ms() const { return static_cast<double>(clock_.nsecsElapsed()) / 1e6; }

  void send(size_t i) {
    if (!result_.error.empty()) return;  // the run failed: nothing more is sent
    const serving::SimulatedRequest& request = requests_[i];
    RemoteRequestResult& out = result_.requests[i];
    out.record.request_id = static_cast<int64_t>(i);
    out.record.prompt_tokens = static_cast<int64_t>(request.prompt_ids.size());
    out.record.arrival_ms = now_ms();
    out.record.first_scheduled_ms = -1.0;  // the server's queue is not visible from here
    const json body = {{"prompt", request.prompt_ids},
                       {"max_tokens", request.max_tokens},
                       {"temperature", 0.0},
                       {"ignore_eos", true},  // exactly max_tokens, as the local bench
                       {"stream", true},
                       {"stream_options", {{"include_usage", true}}}};
    QNetworkRequest http(endpoint(options_.server, "/v1/completions"));
    http.setHeader(QNetworkRequest::ContentTypeHeader, "application/json");
    QNetworkReply* reply =
        post_on_own_connection(&network_, http, QByteArray::fromStdString(body.dump()),
                               static_cast<int>(options_.timeout_s * 1000.0));
    ++in_flight_;
    auto parser = std::make_shared<SseParser>();
    QObject::connect(reply, &QNetworkReply::readyRead, &loop_, [this, reply, parser, i] {
      read_events(*reply, *parser, result_.requests[i]);
    });
    QObject::connect(reply, &QNetworkReply::finished, &loop_, [this, reply, parser, i] {
      if (reply->isOpen()) read_events(*reply, *parser, result_.requests[i]);
      finish(*reply, *parser, result_.requests[i]);
      reply->deleteLater();
    });
  }

  void read_events(QNetworkReply& reply, SseParser& parser, RemoteRequestResult& out) {
    if (!result_.error.empty()) return;
    const QByteArray bytes = reply.readAll();
    for (const std::string& data : parser.feed({bytes.constData(), size_t(bytes.size())})) {
      const double at = now_ms();
      try {
        const CompletionChunk chunk = read_completion_chunk(data);
        if (chunk.completion_tokens) out.completion_tokens = chunk.completion_tokens;
        if (chunk.token) {
          out.record.token_times_ms.push_back(at);
          out.text += chunk.text;
        }
        if (chunk.finish_reason) out.finish_reason = *chunk.finish_reason;
      } catch (const NotOpenAiError& error) {
        fail(error.what());
        return;
      }
    }
  }

  void finish(QNetworkReply& reply, const SseParser& parser, RemoteRequestResult& out) {
    --in_flight_;
    out.record.finished_ms = now_ms();
    if (result_.error.empty()) {
      if (reply.error() != QNetworkReply::NoError) {
        // Nobody can connect: the other requests fail at once on their own (aborting them
        // races Qt's own error delivery).
        const bool unreachable = reply.error() == QNetworkReply::ConnectionRefusedError ||
                                 reply.error() == QNetworkReply::HostNotFoundError;
        fail(network_problem(reply, options_.server, options_.timeout_s), !unreachable);
      } else if (!parser.done() && out.finish_reason.empty()) {
        fail("the server at " + options_.server.toString().toStdString() +
             " ended a stream before it finished (no finish reason, no [DONE])");
      }
    }
    ++ended_;
    if (ended_ == requests_.size() || (!result_.error.empty() && in_flight_ == 0)) loop_.quit();
  }

  // The run ends with `why`; the streams still running stop too when stop_others.
  void fail(const std::string& why, bool stop_others = true) {
    if (!result_.error.empty()) return;
    result_.error = why;
    if (!stop_others) return;
    for (QNetworkReply* reply : network_.findChildren<QNetworkReply*>()) {
      if (reply->isRunning() && reply->error() == QNetworkReply::NoError) reply->abort();
    }
    if (in_flight_ == 0) loop_.quit();
  }

  void poll_metrics() {
    if (metrics_reply_ != nullptr || !result_.server.metrics_problem.empty()) return;
    metrics_reply_ = network_.get(QNetworkRequest(endpoint(options_.server, "/metrics")));
    QObject::connect(metrics_reply_, &QNetworkReply::finished, &loop_, [this] {
      QNetworkReply* reply = metrics_reply_;
      metrics_reply_ = nullptr;
      take_metrics(*reply);
      reply->deleteLater();
    });
    if (slots_reply_ != nullptr || !slots_readable_) return;
    slots_reply_ = network_.get(QNetworkRequest(endpoint(options_.server, "/slots")));
    QObject::connect(slots_reply_, &QNetworkReply::finished, &loop_, [this] {
      QNetworkReply* reply = slots_reply_;
      slots_reply_ = nullptr;
      take_slots(*reply);
      reply->deleteLater();
    });
  }

  // Slots are llama-server's alone: any other answer (vLLM's 404, llama-server without
  // --slots) only means there are none to show.
  void take_slots(QNetworkReply& reply) {
    const QByteArray text = reply.readAll();
    try {
      if (reply.error() != QNetworkReply::NoError) throw MetricsFormatError("no slots");
      const SlotsReport slots = read_llama_slots({text.constData(), size_t(text.size())});
      ServerReport& report = result_.server;
      report.slots = slots;
      report.peak_slots_processing = std::max(report.peak_slots_processing, slots.processing);
      report.peak_slot_tokens = std::max(report.peak_slot_tokens, slots.tokens_held);
    } catch (const MetricsFormatError&) {
      if (reply.error() != QNetworkReply::OperationCanceledError) slots_readable_ = false;
    }
  }

  // A last read, waited for: the counters once the load is over.
  void poll_metrics_now() {
    QEventLoop wait;
    QNetworkReply* reply = network_.get(QNetworkRequest(endpoint(options_.server, "/metrics")));
    QObject::connect(reply, &QNetworkReply::finished, &wait, &QEventLoop::quit);
    wait.exec();
    take_metrics(*reply);
    reply->deleteLater();
  }

  void take_metrics(QNetworkReply& reply) {
    ServerReport& report = result_.server;
    if (reply.error() != QNetworkReply::NoError) {
      if (reply.error() == QNetworkReply::OperationCanceledError) return;  // the run ended
      report.metrics_problem = metrics_unavailable(reply);
      return;
    }
    const QByteArray text = reply.readAll();
    try {
      const ServerMetrics m = read_server_metrics({text.constData(), size_t(text.size())});
      if (!report.first) report.first = m;
      report.last = m;
      ++report.polls;
      report.peak_running = std::max(report.peak_running, m.requests_running.value_or(0.0));
      report.peak_waiting = std::max(report.peak_waiting, m.requests_waiting.value_or(0.0));
      report.peak_kv_usage = std::max(report.peak_kv_usage, m.kv_usage.value_or(0.0));
    } catch (const MetricsFormatError& error) {
      fail(std::string("/metrics: ") + error.what());
    }
  }

  RemoteLoadOptions options_;
  const std::vector<serving::SimulatedRequest>& requests_;
  RemoteLoadResult result_;
  QNetworkAccessManager network_;
  QEventLoop loop_;
  QTimer poll_timer_;
  QNetworkReply* metrics_reply_ = nullptr;
  QNetworkReply* slots_reply_ = nullptr;
  bool slots_readable_ = true;
  QElapsedTimer clock_;
  size_t ended_ = 0;
  int in_flight_ = 0;
};

}  // namespace

RemoteLoadResult run_remote_load(const RemoteLoadOptions& options,
                                 const std::vector<serving::SimulatedRequest>& requests) {
  Runner runner(options, requests);
  return runner.run();
}

}  // namespace servescope::remote
