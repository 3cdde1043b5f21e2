// The window's connection to a real serving engine (remote mode): the user's prompt and the
// classmates' become real streaming POST /v1/completions requests, each token timed on this
// session's clock as it arrives, while the server's /metrics and /slots are polled for its
// own view. It lives on a thread of its own (the window moves it there), so the tokens' times
// are not the GUI thread's frame times, and every call and report is a queued signal.
//
// Nothing here waits: a refused connection, a server that stops answering (the transfer
// timeout), a stream dropped before it finished, an answer that is not an OpenAI completion
// stream and /metrics that is not Prometheus each end in one report naming what happened.
#pragma once

#include <QElapsedTimer>
#include <QMetaType>
#include <QObject>
#include <QPair>
#include <QString>
#include <QVector>
#include <QUrl>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "app/remote/server_metrics.h"
#include "engine/telemetry/records.h"

class QNetworkAccessManager;
class QNetworkReply;
class QTimer;

namespace servescope::remote {

class SseParser;

struct RemotePrompt {
  int64_t request = 0;  // the window's number for it
  std::string text;     // sent as text: the server tokenizes it with its own model
  int64_t max_tokens = 0;
  double temperature = 0.0;  // 0: greedy
  uint64_t seed = 0;
  bool ignore_eos = false;  // exactly max_tokens (the classmates, as the local ones)
  bool logprobs = false;    // ask for each token's probability and the likeliest others
};

struct RemoteToken {
  int64_t request = 0;
  double at_ms = 0.0;  // on the session's clock: ms since open()
  QString text;
  double probability = -1.0;  // < 0: the server did not say
  QVector<QPair<QString, double>> alternatives;  // the likeliest tokens there, most likely first
};

// A request that ended: record (arrival = sent, each token's arrival, finished; queue unknown,
// first_scheduled_ms -1), the server's finish reason and prompt length where it said them, or
// what went wrong.
struct RemoteRequestEnd {
  telemetry::RequestRecord record;
  std::string finish_reason;
  std::string error;  // empty: it ended as it should
  bool cancelled = false;
};

// One read of the server's own figures, at_ms on the session's clock.
struct ServerPoll {
  double at_ms = 0.0;
  std::optional<ServerMetrics> metrics;
  std::optional<SlotsReport> slots;  // the latest /slots read (llama-server alone has one)
};

struct ServerIdentity {
  QUrl url;
  QString model;  // the first model /v1/models lists
};

class RemoteSession : public QObject {
  Q_OBJECT

 public:
  // poll_ms: how often /metrics and /slots are read while a stream is open; with none open,
  // once every kIdlePollMs at most, so a class of laptops left attached does not keep a shared
  // server busy answering metrics.
  explicit RemoteSession(double timeout_s = 30.0, double poll_ms = 100.0);
  static constexpr int kIdlePollMs = 1000;
  ~RemoteSession() override;

 public Q_SLOTS:
  // Asks /v1/models; connected, or connection_failed. Then polls /metrics and /slots.
  void open(const QUrl& server);
  void send(const servescope::remote::RemotePrompt& prompt);
  // Every stream ends now (reported as cancelled).
  void cancel_all();

 Q_SIGNALS:
  void connected(const servescope::remote::ServerIdentity& server);
  void connection_failed(const QString& message);
  // A prompt went out, at_ms on the session's clock.
  void request_sent(qint64 request, double at_ms);
  void token_arrived(const servescope::remote::RemoteToken& token);
  void request_ended(const servescope::remote::RemoteRequestEnd& end);
  void server_polled(const servescope::remote::ServerPoll& poll);
  // Once: why the server's own figures stopped or never came (no /metrics, not Prometheus).
  void metrics_problem(const QString& message);

 private:
  struct Stream;
  double now_ms() const;
  void take_models(QNetworkReply& reply);
  void read_stream(QNetworkReply& reply, Stream& stream);
  void end_stream(QNetworkReply* reply);
  void poll();
  // GET `path` unless the last one is still unanswered; `take` reads the answer.
  void get_once(QNetworkReply*& pending, const char* path,
                void (RemoteSession::*take)(QNetworkReply&));
  void take_metrics(QNetworkReply& reply);
  void take_slots(QNetworkReply& reply);
  void pace_polls();  // fast while a stream is open, slow when none is

  int poll_ms_;
  double timeout_s_;
  QUrl server_;
  QNetworkAccessManager* network_;
  QTimer* poll_timer_;
  QElapsedTimer clock_;  // started by open(): every time reported is ms since then
  std::map<QNetworkReply*, Stream> streams_;
  QNetworkReply* metrics_reply_ = nullptr;
  QNetworkReply* slots_reply_ = nullptr;
  bool metrics_readable_ = true;
  bool slots_readable_ = true;
  std::optional<SlotsReport> slots_;
};

}  // namespace servescope::remote

Q_DECLARE_METATYPE(servescope::remote::RemotePrompt)
Q_DECLARE_METATYPE(servescope::remote::RemoteToken)
Q_DECLARE_METATYPE(servescope::remote::RemoteRequestEnd)
Q_DECLARE_METATYPE(servescope::remote::ServerPoll)
Q_DECLARE_METATYPE(servescope::remote::ServerIdentity)
