// The window's session with a serving engine (remote_session.h) against scripted servers: it
// connects through /v1/models, streams the user's and the classmates' requests with each
// token's time, probability and alternatives, polls /metrics and /slots, and ends every failure
// in one report, in bounded time: a refused connection, a server that is not OpenAI-compatible,
// a dropped stream, a server that stops answering, metrics that are not Prometheus text, Stop.
#include <QElapsedTimer>
#include <algorithm>
#include <QEventLoop>
#include <cmath>
#include <gtest/gtest.h>
#include <vector>

#include "app/remote/remote_session.h"
#include "tests/remote/scripted_server.h"

namespace servescope::remote {
namespace {

const QByteArray kModels = R"({"object":"list","data":[{"id":"/models/stories.gguf"}]})";
// llama.cpp's shape: the token's log-probability and the likeliest tokens there.
const QByteArray kLogprobs =
    R"({"content":[{"token":" t","logprob":-0.5,"top_logprobs":[)"
    R"({"token":" a","logprob":-1.5},{"token":" t","logprob":-0.5}]}]})";
const QByteArray kSlots =
    R"([{"id":0,"n_ctx":256,"is_processing":true,"prompt":"x","next_token":[{"n_decoded":3}]},)"
    R"({"id":1,"n_ctx":256,"is_processing":false}])";

// Everything the session reported, in order.
struct Reports {
  std::vector<ServerIdentity> connected;
  QString failure;
  std::vector<RemoteToken> tokens;
  std::vector<RemoteRequestEnd> ended;
  std::vector<ServerPoll> polls;
  QString metrics_problem;
  std::vector<std::pair<qint64, double>> sent;

  explicit Reports(RemoteSession& session) {
    QObject::connect(&session, &RemoteSession::connected,
                     [this](const ServerIdentity& s) { connected.push_back(s); });
    QObject::connect(&session, &RemoteSession::connection_failed,
                     [this](const QString& why) { failure = why; });
    QObject::connect(&session, &RemoteSession::token_arrived,
                     [this](const RemoteToken& t) { tokens.push_back(t); });
    QObject::connect(&session, &RemoteSession::request_ended,
                     [this](const RemoteRequestEnd& e) { ended.push_back(e); });
    QObject::connect(&session, &RemoteSession::server_polled,
                     [this](const ServerPoll& p) { polls.push_back(p); });
    QObject::connect(&session, &RemoteSession::metrics_problem,
                     [this](const QString& why) { metrics_problem = why; });
    QObject::connect(&session, &RemoteSession::request_sent,
                     [this](qint64 id, double at) { sent.emplace_back(id, at); });
  }
};

// Runs the event loop until `done` holds; false after `limit_ms`.
bool wait_until(const std::function<bool()>& done, int limit_ms = 5000) {
  QElapsedTimer clock;
  clock.start();
  while (!done()) {
    if (clock.elapsed() > limit_ms) return false;
    QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
  }
  return true;
}

RemotePrompt prompt(int64_t id, int64_t max_tokens) {
  RemotePrompt p;
  p.request = id;
  p.text = "Once upon a time";
  p.max_tokens = max_tokens;
  p.logprobs = true;
  return p;
}

// A well-behaved llama-server: models, metrics, slots, streams of `tokens` tokens.
Script well_behaved(int tokens, int gap_ms) {
  return [tokens, gap_ms](const QByteArray& line, QTcpSocket& socket) {
    if (line.startsWith("GET /v1/models")) {
      answer(socket, 200, "application/json", kModels);
    } else if (line.startsWith("GET /metrics")) {
      answer(socket, 200, "text/plain", kLlamaMetrics);
    } else if (line.startsWith("GET /slots")) {
      answer(socket, 200, "application/json", kSlots);
    } else {
      stream_tokens(socket, tokens, gap_ms, false, kLogprobs);
    }
  };
}

TEST(RemoteSession, StreamsTokensWithTheirTimesProbabilitiesAndTheServersView) {
  ScriptedServer server(well_behaved(5, 20));
  RemoteSession session(5.0, 20.0);
  Reports reports(session);
  session.open(server.url());
  ASSERT_TRUE(wait_until([&] { return !reports.connected.empty(); })) << reports.failure.toStdString();
  EXPECT_EQ(reports.connected[0].model, "/models/stories.gguf");
  session.send(prompt(7, 5));
  session.send(prompt(8, 5));
  ASSERT_TRUE(wait_until([&] { return reports.ended.size() == 2; }));
  ASSERT_EQ(reports.sent.size(), 2u);
  ASSERT_EQ(reports.tokens.size(), 10u);
  for (const RemoteToken& token : reports.tokens) {
    EXPECT_NEAR(token.probability, std::exp(-0.5), 1e-9);
    ASSERT_EQ(token.alternatives.size(), 2);
    EXPECT_EQ(token.alternatives[0].first, " t");  // most likely first
    EXPECT_NEAR(token.alternatives[1].second, std::exp(-1.5), 1e-9);
  }
  for (const RemoteRequestEnd& end : reports.ended) {
    EXPECT_TRUE(end.error.empty()) << end.error;
    EXPECT_EQ(end.finish_reason, "length");
    EXPECT_EQ(end.record.finish_reason, telemetry::FinishReason::kMaxTokens);
    ASSERT_EQ(end.record.token_times_ms.size(), 5u);
    // The token times are the ones the tokens came with, after the send, 20 ms apart there.
    EXPECT_GE(end.record.token_times_ms.front(), end.record.arrival_ms);
    EXPECT_GT(end.record.token_times_ms.back() - end.record.token_times_ms.front(), 4 * 20 * 0.5);
    const double sent_at = end.record.request_id == 7 ? reports.sent[0].second : reports.sent[1].second;
    EXPECT_EQ(end.record.arrival_ms, sent_at);
  }
  ASSERT_TRUE(wait_until([&] { return !reports.polls.empty() && reports.polls.back().slots; }));
  const ServerPoll& poll = reports.polls.back();
  ASSERT_TRUE(poll.metrics);
  EXPECT_EQ(poll.metrics->generated_tokens_total, 20.0);
  EXPECT_EQ(poll.slots->slots, 2);
  EXPECT_EQ(poll.slots->processing, 1);
  EXPECT_EQ(poll.slots->context_tokens, 512);
  EXPECT_TRUE(reports.metrics_problem.isEmpty());
}

TEST(RemoteSession, ManyStreamsReachTheServerTogether) {
  ScriptedServer server(well_behaved(4, 60));
  RemoteSession session(5.0, 1000.0);
  Reports reports(session);
  session.open(server.url());
  ASSERT_TRUE(wait_until([&] { return !reports.connected.empty(); }));
  for (int i = 0; i < 12; ++i) session.send(prompt(i, 4));
  ASSERT_TRUE(wait_until([&] { return reports.ended.size() == 12; }));
  EXPECT_GE(server.peak_connections(), 12);
}

// A class of laptops left attached must not keep a shared server answering /metrics ten times
// a second: fast polls while a stream is open, one a second when none is.
TEST(RemoteSession, PollsFastWhileAStreamIsOpenAndOnceASecondWhenIdle) {
  ScriptedServer server(well_behaved(30, 20));  // a stream of about 600 ms
  RemoteSession session(5.0, 20.0);
  Reports reports(session);
  session.open(server.url());
  ASSERT_TRUE(wait_until([&] { return !reports.connected.empty() && !reports.polls.empty(); }));
  const size_t idle_from = reports.polls.size();
  QElapsedTimer idle;
  idle.start();
  wait_until([&] { return idle.elapsed() >= 1500; }, 3000);
  EXPECT_LE(reports.polls.size() - idle_from, 2u) << "idle: about one poll a second";
  session.send(prompt(1, 30));
  ASSERT_TRUE(wait_until([&] { return reports.ended.size() == 1; }));
  const telemetry::RequestRecord& record = reports.ended[0].record;
  const auto during = std::count_if(reports.polls.begin(), reports.polls.end(), [&](const ServerPoll& p) {
    return p.at_ms >= record.arrival_ms && p.at_ms <= record.finished_ms;
  });
  EXPECT_GE(during, 8) << "every 20 ms while the stream ran "
                       << record.finished_ms - record.arrival_ms << " ms";
}

TEST(RemoteSession, ARefusedConnectionSaysSo) {
  app();
  QTcpServer closed;
  closed.listen(QHostAddress::LocalHost, 0);
  const quint16 port = closed.serverPort();
  closed.close();
  RemoteSession session(5.0);
  Reports reports(session);
  session.open(QUrl(QString("http://127.0.0.1:%1").arg(port)));
  ASSERT_TRUE(wait_until([&] { return !reports.failure.isEmpty(); }));
  EXPECT_TRUE(reports.failure.contains("connection was refused")) << reports.failure.toStdString();
  EXPECT_TRUE(reports.connected.empty());
}

TEST(RemoteSession, AServerThatIsNotOpenAiCompatibleIsNamed) {
  ScriptedServer not_found([](const QByteArray&, QTcpSocket& socket) {
    answer(socket, 404, "text/html", "<html>no</html>");
  });
  RemoteSession session(5.0);
  Reports reports(session);
  session.open(not_found.url());
  ASSERT_TRUE(wait_until([&] { return !reports.failure.isEmpty(); }));
  EXPECT_TRUE(reports.failure.contains("not an OpenAI-compatible server")) << reports.failure.toStdString();
  EXPECT_TRUE(reports.failure.contains("404 to GET /v1/models")) << reports.failure.toStdString();

  ScriptedServer web_page([](const QByteArray&, QTcpSocket& socket) {
    answer(socket, 200, "text/html", "<html><body>a web page</body></html>");
  });
  RemoteSession second(5.0);
  Reports second_reports(second);
  second.open(web_page.url());
  ASSERT_TRUE(wait_until([&] { return !second_reports.failure.isEmpty(); }));
  EXPECT_TRUE(second_reports.failure.contains("model list")) << second_reports.failure.toStdString();
}

TEST(RemoteSession, ADroppedStreamAndASilentServerEndTheirRequestsWithAReason) {
  bool silent = false;
  ScriptedServer server([&silent](const QByteArray& line, QTcpSocket& socket) {
    if (line.startsWith("GET /v1/models")) {
      answer(socket, 200, "application/json", kModels);
    } else if (line.startsWith("POST")) {
      if (!silent) stream_tokens(socket, 2, 10, true);
    } else {
      answer(socket, 404, "text/plain", "no");
    }
  });
  RemoteSession session(0.5);
  Reports reports(session);
  session.open(server.url());
  ASSERT_TRUE(wait_until([&] { return !reports.connected.empty(); }));
  session.send(prompt(1, 5));
  ASSERT_TRUE(wait_until([&] { return reports.ended.size() == 1; }));
  const std::string dropped = reports.ended[0].error;
  EXPECT_TRUE(dropped.find("closed the connection") != std::string::npos ||
              dropped.find("ended a stream before it finished") != std::string::npos)
      << dropped;
  EXPECT_EQ(reports.ended[0].record.token_times_ms.size(), 2u);

  silent = true;
  QElapsedTimer clock;
  clock.start();
  session.send(prompt(2, 5));
  ASSERT_TRUE(wait_until([&] { return reports.ended.size() == 2; }));
  EXPECT_NE(reports.ended[1].error.find("no answer"), std::string::npos) << reports.ended[1].error;
  EXPECT_LT(clock.elapsed(), 4000);
  // No /metrics (404): said once, and the streams went on without it.
  EXPECT_TRUE(reports.metrics_problem.contains("--metrics")) << reports.metrics_problem.toStdString();
}

TEST(RemoteSession, MetricsThatAreNotPrometheusTextAreNamed) {
  ScriptedServer server([](const QByteArray& line, QTcpSocket& socket) {
    if (line.startsWith("GET /v1/models")) {
      answer(socket, 200, "application/json", kModels);
    } else if (line.startsWith("GET /metrics")) {
      answer(socket, 200, "text/html", "<html>\n<body>metrics</body>\n</html>\n");
    } else {
      answer(socket, 404, "text/plain", "no");
    }
  });
  RemoteSession session(5.0, 20.0);
  Reports reports(session);
  session.open(server.url());
  ASSERT_TRUE(wait_until([&] { return !reports.metrics_problem.isEmpty(); }));
  EXPECT_TRUE(reports.metrics_problem.contains("line 1")) << reports.metrics_problem.toStdString();
  EXPECT_TRUE(reports.polls.empty());
}

// llama-server stopped with SIGTERM closes its listener and keeps its streams open, silent: the
// next poll is refused, and the session says what that means and what Stop does.
TEST(RemoteSession, AServerThatStopsListeningIsSaidToHaveStopped) {
  bool stopped = false;
  const Script streams = well_behaved(1000, 50);  // a stream that outlasts the test
  ScriptedServer server([&stopped, streams](const QByteArray& line, QTcpSocket& socket) {
    // Stopped: the kept-alive connection of the polls is closed, as llama-server closes it.
    if (stopped && line.startsWith("GET")) {
      socket.abort();
      return;
    }
    streams(line, socket);
  });
  RemoteSession session(30.0, 20.0);
  Reports reports(session);
  session.open(server.url());
  ASSERT_TRUE(wait_until([&] { return !reports.connected.empty(); }));
  session.send(prompt(1, 1000));
  ASSERT_TRUE(wait_until([&] { return reports.tokens.size() >= 2; }));
  stopped = true;
  server.stop_listening();
  ASSERT_TRUE(wait_until([&] { return !reports.metrics_problem.isEmpty(); }));
  EXPECT_TRUE(reports.metrics_problem.contains("stopped answering")) << reports.metrics_problem.toStdString();
  EXPECT_TRUE(reports.metrics_problem.contains("Stop ends them now"));
  session.cancel_all();
  ASSERT_TRUE(wait_until([&] { return reports.ended.size() == 1; }, 1000));
  EXPECT_TRUE(reports.ended[0].cancelled);
}

TEST(RemoteSession, StopEndsEveryStreamAsCancelled) {
  ScriptedServer server(well_behaved(50, 50));
  RemoteSession session(5.0, 1000.0);
  Reports reports(session);
  session.open(server.url());
  ASSERT_TRUE(wait_until([&] { return !reports.connected.empty(); }));
  session.send(prompt(1, 50));
  session.send(prompt(2, 50));
  ASSERT_TRUE(wait_until([&] { return reports.tokens.size() >= 2; }));
  session.cancel_all();
  ASSERT_TRUE(wait_until([&] { return reports.ended.size() == 2; }, 1000));
  for (const RemoteRequestEnd& end : reports.ended) {
    EXPECT_TRUE(end.cancelled);
    EXPECT_TRUE(end.error.empty()) << end.error;
    EXPECT_EQ(end.record.finish_reason, telemetry::FinishReason::kCancelled);
  }
}

}  // namespace
}  // namespace servescope::remote
