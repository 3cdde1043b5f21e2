#include "app/remote/remote_session.h"

#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QTimer>
#include <algorithm>
#include <utility>
#include <nlohmann/json.hpp>

#include "app/remote/completion_stream.h"
#include "app/remote/sse_parser.h"

namespace servescope::remote {

namespace {

using nlohmann::json;

constexpr int kAlternatives = 5;  // as many as the local engine reports for the user's tokens

}  // namespace

struct RemoteSession::Stream {
  RemoteRequestEnd end;
  SseParser parser;
  bool cancelled = false;
};

RemoteSession::RemoteSession(double timeout_s, double poll_ms)
    : poll_ms_(static_cast<int>(poll_ms)),
      timeout_s_(timeout_s),
      network_(new QNetworkAccessManager(this)),
      poll_timer_(new QTimer(this)) {
  network_->setTransferTimeout(static_cast<int>(timeout_s * 1000.0));
  pace_polls();
  connect(poll_timer_, &QTimer::timeout, this, &RemoteSession::poll);
}

RemoteSession::~RemoteSession() {
  // Replies are the manager's children; their finished signals must not reach a half-gone
  // session.
  for (auto& [reply, stream] : streams_) reply->disconnect(this);
  if (metrics_reply_) metrics_reply_->disconnect(this);
  if (slots_reply_) slots_reply_->disconnect(this);
}

double RemoteSession::now_ms() const {
  return static_cast<double>(clock_.nsecsElapsed()) / 1e6;
}

void RemoteSession::open(const QUrl& server) {
  server_ = server;
  clock_.start();
  QNetworkReply* reply = network_->get(QNetworkRequest(endpoint(server, "/v1/models")));
  connect(reply, &QNetworkReply::finished, this, [this, reply] {
    take_models(*reply);
    reply->deleteLater();
  });
}

void RemoteSession::take_models(QNetworkReply& reply) {
  if (reply.error() != QNetworkReply::NoError) {
    Q_EMIT connection_failed(QString::fromStdString(network_problem(reply, server_, timeout_s_)));
    return;
  }
  const QByteArray bytes = reply.readAll();
  const json models = json::parse(bytes.toStdString(), nullptr, false);
  if (models.is_discarded() || !models.is_object() || !models.contains("data") ||
      !models["data"].is_array()) {
    Q_EMIT connection_failed(
        QStringLiteral("not an OpenAI-compatible server: %1 answered GET /v1/models with "
                       "something other than a model list (\"%2\")")
            .arg(server_.toString(), QString::fromUtf8(bytes.left(40)).simplified()));
    return;
  }
  ServerIdentity identity;
  identity.url = server_;
  if (!models["data"].empty() && models["data"][0].is_object()) {
    identity.model = QString::fromStdString(models["data"][0].value("id", std::string()));
  }
  Q_EMIT connected(identity);
  poll();
  poll_timer_->start();
}

void RemoteSession::send(const RemotePrompt& prompt) {
  json body = {{"prompt", prompt.text},
               {"max_tokens", prompt.max_tokens},
               {"temperature", prompt.temperature},
               {"seed", prompt.seed},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  if (prompt.ignore_eos) body["ignore_eos"] = true;
  if (prompt.logprobs) body["logprobs"] = kAlternatives;
  QNetworkRequest http(endpoint(server_, "/v1/completions"));
  http.setHeader(QNetworkRequest::ContentTypeHeader, "application/json");
  QNetworkReply* reply = post_on_own_connection(network_, http, QByteArray::fromStdString(body.dump()),
                                                static_cast<int>(timeout_s_ * 1000.0));
  Stream& stream = streams_[reply];
  stream.end.record.request_id = prompt.request;
  stream.end.record.arrival_ms = now_ms();
  stream.end.record.first_scheduled_ms = -1.0;  // the server's queue is not visible from here
  Q_EMIT request_sent(prompt.request, stream.end.record.arrival_ms);
  connect(reply, &QNetworkReply::readyRead, this, [this, reply] {
    const auto it = streams_.find(reply);
    if (it != streams_.end()) read_stream(*reply, it->second);
  });
  connect(reply, &QNetworkReply::finished, this, [this, reply] { end_stream(reply); });
  pace_polls();
}

void RemoteSession::pace_polls() {
  const int interval = streams_.empty() ? std::max(poll_ms_, kIdlePollMs) : poll_ms_;
  if (poll_timer_->interval() == interval) return;
  poll_timer_->setInterval(interval);  // restarts a running timer with the new interval
  if (!streams_.empty() && poll_timer_->isActive()) poll();  // the load's start, at once
}

void RemoteSession::read_stream(QNetworkReply& reply, Stream& stream) {
  if (!stream.end.error.empty()) return;
  const QByteArray bytes = reply.readAll();
  telemetry::RequestRecord& record = stream.end.record;
  for (const std::string& data : stream.parser.feed({bytes.constData(), size_t(bytes.size())})) {
    const double at = now_ms();
    try {
      const CompletionChunk chunk = read_completion_chunk(data);
      if (chunk.prompt_tokens) record.prompt_tokens = *chunk.prompt_tokens;
      if (chunk.finish_reason) stream.end.finish_reason = *chunk.finish_reason;
      if (!chunk.token) continue;
      record.token_times_ms.push_back(at);
      RemoteToken token{record.request_id, at, QString::fromStdString(chunk.text),
                        chunk.probability.value_or(-1.0), {}};
      for (const auto& [text, probability] : chunk.alternatives) {
        token.alternatives.push_back({QString::fromStdString(text), probability});
      }
      Q_EMIT token_arrived(token);
    } catch (const NotOpenAiError& error) {
      stream.end.error = error.what();
      reply.abort();
      return;
    }
  }
}

void RemoteSession::end_stream(QNetworkReply* reply) {
  const auto it = streams_.find(reply);
  if (it == streams_.end()) return;
  Stream& stream = it->second;
  if (reply->isOpen()) read_stream(*reply, stream);
  RemoteRequestEnd end = std::move(stream.end);
  end.record.finished_ms = now_ms();
  end.cancelled = stream.cancelled;
  if (end.error.empty() && !stream.cancelled) {
    if (reply->error() != QNetworkReply::NoError) {
      end.error = network_problem(*reply, server_, timeout_s_);
    } else if (!stream.parser.done() && end.finish_reason.empty()) {
      end.error = "the server at " + server_.toString().toStdString() +
                  " ended a stream before it finished (no finish reason, no [DONE])";
    }
  }
  end.record.finish_reason = stream.cancelled ? telemetry::FinishReason::kCancelled
                             : end.finish_reason == "stop" ? telemetry::FinishReason::kStopToken
                                                           : telemetry::FinishReason::kMaxTokens;
  streams_.erase(it);
  reply->deleteLater();
  pace_polls();
  Q_EMIT request_ended(end);
}

void RemoteSession::cancel_all() {
  std::vector<QNetworkReply*> running;
  for (auto& [reply, stream] : streams_) {
    stream.cancelled = true;
    running.push_back(reply);
  }
  for (QNetworkReply* reply : running) reply->abort();  // finished comes at once: end_stream
}

void RemoteSession::poll() {
  if (metrics_readable_) get_once(metrics_reply_, "/metrics", &RemoteSession::take_metrics);
  if (slots_readable_) get_once(slots_reply_, "/slots", &RemoteSession::take_slots);
  if (!metrics_readable_ && !slots_readable_) poll_timer_->stop();
}

void RemoteSession::get_once(QNetworkReply*& pending, const char* path,
                             void (RemoteSession::*take)(QNetworkReply&)) {
  if (pending != nullptr) return;  // the last one is unanswered: no second in its place
  pending = network_->get(QNetworkRequest(endpoint(server_, path)));
  connect(pending, &QNetworkReply::finished, this, [this, &pending, take] {
    QNetworkReply* reply = std::exchange(pending, nullptr);
    (this->*take)(*reply);
    reply->deleteLater();
  });
}

void RemoteSession::take_metrics(QNetworkReply& reply) {
  ServerPoll report;
  report.at_ms = now_ms();
  report.slots = slots_;
  if (reply.error() != QNetworkReply::NoError) {
    if (reply.error() == QNetworkReply::OperationCanceledError) return;
    metrics_readable_ = false;
    if (reply.error() == QNetworkReply::ConnectionRefusedError) {
      // It answered before: its listener is gone (stopped, or restarting). A stream it keeps
      // open without sending ends at the timeout; Stop ends them all now.
      Q_EMIT metrics_problem(
          tr("the server at %1 stopped answering: a new connection to it was refused. Streams "
             "still open end if it sends nothing for %2 s; Stop ends them now.")
              .arg(server_.toString())
              .arg(static_cast<int>(timeout_s_)));
      return;
    }
    Q_EMIT metrics_problem(QString::fromStdString(metrics_unavailable(reply)));
    return;
  }
  const QByteArray text = reply.readAll();
  try {
    report.metrics = read_server_metrics({text.constData(), size_t(text.size())});
  } catch (const MetricsFormatError& error) {
    metrics_readable_ = false;
    Q_EMIT metrics_problem(tr("/metrics: %1").arg(QString::fromUtf8(error.what())));
    return;
  }
  Q_EMIT server_polled(report);
}

// Slots are llama-server's alone: any other answer (vLLM's 404, llama-server without --slots)
// only means there are none to show; a server without /metrics still reports its slots.
void RemoteSession::take_slots(QNetworkReply& reply) {
  const QByteArray text = reply.readAll();
  try {
    if (reply.error() != QNetworkReply::NoError) throw MetricsFormatError("no slots");
    slots_ = read_llama_slots({text.constData(), size_t(text.size())});
    if (!metrics_readable_) Q_EMIT server_polled(ServerPoll{now_ms(), std::nullopt, slots_});
  } catch (const MetricsFormatError&) {
    if (reply.error() != QNetworkReply::OperationCanceledError) slots_readable_ = false;
  }
}

}  // namespace servescope::remote
