// The load client against scripted HTTP servers on 127.0.0.1 (a QTcpServer in the test): a
// well-behaved stream is timed token by token on the client's clock, and every failure a real
// server can show ends the run with a message saying which, in bounded time: a refused
// connection, a server that never answers, a stream dropped midway, a server that is not
// OpenAI-compatible, and /metrics that is not Prometheus text.
#include <QElapsedTimer>
#include <gtest/gtest.h>
#include <string>

#include "app/remote/remote_load.h"
#include "tests/remote/scripted_server.h"

namespace servescope::remote {
namespace {

serving::SimulatedRequest request(int64_t max_tokens) {
  return {0.0, {1, 2, 3}, max_tokens};
}

RemoteLoadOptions options(const QUrl& url, double timeout_s = 5.0) {
  RemoteLoadOptions o;
  o.server = url;
  o.timeout_s = timeout_s;
  o.metrics_poll_ms = 20;
  return o;
}

TEST(RemoteLoad, TimesEachStreamedTokenAndReadsTheServersMetrics) {
  ScriptedServer server([](const QByteArray& line, QTcpSocket& socket) {
    if (line.startsWith("GET /metrics")) {
      answer(socket, 200, "text/plain", kLlamaMetrics);
    } else {
      stream_tokens(socket, 5, 20, false);
    }
  });
  const RemoteLoadResult r = run_remote_load(options(server.url()), {request(5), request(5)});
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.requests.size(), 2u);
  for (const RemoteRequestResult& one : r.requests) {
    ASSERT_EQ(one.record.token_times_ms.size(), 5u);
    EXPECT_EQ(one.text, " t0 t1 t2 t3 t4");
    EXPECT_EQ(one.finish_reason, "length");
    EXPECT_EQ(one.record.prompt_tokens, 3);
    // Tokens 20 ms apart on the server: at least most of that on the client's clock.
    const double gaps = one.record.token_times_ms.back() - one.record.token_times_ms.front();
    EXPECT_GT(gaps, 4 * 20 * 0.5);
    EXPECT_GE(one.record.token_times_ms.front(), one.record.arrival_ms);
  }
  EXPECT_GT(r.wall_ms, 0.0);
  ASSERT_TRUE(r.server.last);
  EXPECT_EQ(r.server.last->kind, ServerKind::kLlamaCpp);
  EXPECT_EQ(r.server.last->generated_tokens_total, 20.0);
  EXPECT_GE(r.server.polls, 2);
}

TEST(RemoteLoad, ARefusedConnectionSaysSo) {
  QTcpServer closed;
  app();
  closed.listen(QHostAddress::LocalHost, 0);
  const quint16 port = closed.serverPort();
  closed.close();  // nothing listens there now
  const RemoteLoadResult r = run_remote_load(
      options(QUrl(QString("http://127.0.0.1:%1").arg(port))), {request(3), request(3)});
  EXPECT_NE(r.error.find("connection was refused"), std::string::npos) << r.error;
}

TEST(RemoteLoad, AServerThatNeverAnswersTimesOut) {
  ScriptedServer server([](const QByteArray&, QTcpSocket&) {});  // reads, never answers
  QElapsedTimer clock;
  clock.start();
  const RemoteLoadResult r = run_remote_load(options(server.url(), 0.5), {request(3)});
  EXPECT_NE(r.error.find("no answer"), std::string::npos) << r.error;
  EXPECT_LT(clock.elapsed(), 5000) << "the timeout must end the run";
}

TEST(RemoteLoad, AStreamDroppedMidwayIsAnError) {
  ScriptedServer server([](const QByteArray& line, QTcpSocket& socket) {
    if (line.startsWith("GET /metrics")) {
      answer(socket, 200, "text/plain", kLlamaMetrics);
    } else {
      stream_tokens(socket, 2, 10, true);
    }
  });
  const RemoteLoadResult r = run_remote_load(options(server.url()), {request(5)});
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.error.find("closed the connection") != std::string::npos ||
              r.error.find("ended a stream before it finished") != std::string::npos)
      << r.error;
}

TEST(RemoteLoad, AServerThatIsNotOpenAiCompatibleIsNamed) {
  ScriptedServer not_found([](const QByteArray&, QTcpSocket& socket) {
    answer(socket, 404, "text/html", "<html>no</html>");
  });
  RemoteLoadOptions o = options(not_found.url());
  o.poll_metrics = false;
  RemoteLoadResult r = run_remote_load(o, {request(3)});
  EXPECT_NE(r.error.find("not an OpenAI-compatible server"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("404"), std::string::npos) << r.error;

  ScriptedServer html_stream([](const QByteArray&, QTcpSocket& socket) {
    answer(socket, 200, "text/event-stream", "data: <html>hello</html>\n\n");
  });
  o.server = html_stream.url();
  r = run_remote_load(o, {request(3)});
  EXPECT_NE(r.error.find("not an OpenAI-compatible server"), std::string::npos) << r.error;
}

TEST(RemoteLoad, MetricsThatAreNotPrometheusTextAreNamed) {
  ScriptedServer server([](const QByteArray& line, QTcpSocket& socket) {
    if (line.startsWith("GET /metrics")) {
      answer(socket, 200, "text/html", "<html>\n<body>metrics</body>\n</html>\n");
    } else {
      stream_tokens(socket, 3, 10, false);
    }
  });
  const RemoteLoadResult r = run_remote_load(options(server.url()), {request(3)});
  EXPECT_NE(r.error.find("/metrics"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("line 1"), std::string::npos) << r.error;
}

TEST(RemoteLoad, AServerWithoutMetricsStillGivesTheClientsFigures) {
  ScriptedServer server([](const QByteArray& line, QTcpSocket& socket) {
    if (line.startsWith("GET /metrics")) {
      answer(socket, 501, "application/json", "{\"error\":\"metrics disabled\"}");
    } else {
      stream_tokens(socket, 3, 5, false);
    }
  });
  const RemoteLoadResult r = run_remote_load(options(server.url()), {request(3)});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.requests[0].record.token_times_ms.size(), 3u);
  EXPECT_FALSE(r.server.last);
  EXPECT_NE(r.server.metrics_problem.find("--metrics"), std::string::npos)
      << r.server.metrics_problem;
}

}  // namespace
}  // namespace servescope::remote

namespace servescope::remote {
namespace {

// Qt 6.4 runs at most six requests per host and access manager and queues the rest on the
// client: 12 streams at once must reach the server as 12 connections at once.
TEST(RemoteLoad, ManyStreamsRunTogetherNotSixAtATime) {
  ScriptedServer server([](const QByteArray& line, QTcpSocket& socket) {
    if (line.startsWith("GET /metrics")) {
      answer(socket, 200, "text/plain", kLlamaMetrics);
    } else {
      stream_tokens(socket, 4, 60, false);
    }
  });
  RemoteLoadOptions o = options(server.url());
  o.poll_metrics = false;
  const std::vector<serving::SimulatedRequest> twelve(12, request(4));
  const RemoteLoadResult r = run_remote_load(o, twelve);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_GE(server.peak_connections(), 12);
  // Together, each stream's first token comes about when the first stream's does.
  for (const RemoteRequestResult& one : r.requests) {
    EXPECT_LT(one.record.token_times_ms.front() - one.record.arrival_ms, 2 * 60 + 100);
  }
}

}  // namespace
}  // namespace servescope::remote
