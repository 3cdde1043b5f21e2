// The load client against scripted HTTP servers on 127.0.0.1 (a QTcpServer in the test): a
// well-behaved stream is timed token by token on the client's clock, and every failure a real
// server can show ends the run with a message saying which, in bounded time: a refused
// connection, a server that never answers, a stream dropped midway, a server that is not
// OpenAI-compatible, and /metrics that is not Prometheus text.
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTimer>
#include <functional>
#include <gtest/gtest.h>
#include <memory>
#include <string>

#include "app/remote/remote_load.h"

namespace servescope::remote {
namespace {

QCoreApplication& app() {
  static int argc = 1;
  static char name[] = "remote_load_test";
  static char* argv[] = {name, nullptr};
  static QCoreApplication instance(argc, argv);
  return instance;
}

// What the scripted server does with one request (its first line, e.g. "POST /v1/completions").
using Script = std::function<void(const QByteArray& request_line, QTcpSocket& socket)>;

class ScriptedServer {
 public:
  explicit ScriptedServer(Script script) : script_(std::move(script)) {
    app();
    server_.listen(QHostAddress::LocalHost, 0);
    QObject::connect(&server_, &QTcpServer::newConnection, &server_, [this] {
      while (QTcpSocket* socket = server_.nextPendingConnection()) {
        auto buffer = std::make_shared<QByteArray>();
        QObject::connect(socket, &QTcpSocket::readyRead, socket, [this, socket, buffer] {
          buffer->append(socket->readAll());
          const qsizetype head_end = buffer->indexOf("\r\n\r\n");
          if (head_end < 0) return;
          const qsizetype length_at = buffer->toLower().indexOf("content-length:");
          qsizetype body = 0;
          if (length_at >= 0) {
            body = buffer->mid(length_at + 15, buffer->indexOf("\r\n", length_at) - length_at - 15)
                       .trimmed()
                       .toLongLong();
          }
          if (buffer->size() < head_end + 4 + body) return;
          const QByteArray line = buffer->left(buffer->indexOf("\r\n"));
          buffer->clear();
          script_(line, *socket);
        });
      }
    });
  }
  QUrl url() const { return QUrl(QString("http://127.0.0.1:%1").arg(server_.serverPort())); }

 private:
  Script script_;
  QTcpServer server_;
};

void answer(QTcpSocket& socket, int status, const QByteArray& type, const QByteArray& body) {
  socket.write("HTTP/1.1 " + QByteArray::number(status) + " X\r\nContent-Type: " + type +
               "\r\nContent-Length: " + QByteArray::number(body.size()) + "\r\n\r\n" + body);
}

const QByteArray kLlamaMetrics =
    "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total 10\n"
    "llamacpp:tokens_predicted_total 20\nllamacpp:requests_processing 1\n"
    "llamacpp:requests_deferred 0\nllamacpp:n_decode_total 7\n";

// A chunked event stream of `tokens` chunks, each `gap_ms` apart, then [DONE] unless `drop`.
void stream_tokens(QTcpSocket& socket, int tokens, int gap_ms, bool drop) {
  socket.write(
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
  auto send_chunk = [&socket](const QByteArray& data) {
    socket.write(QByteArray::number(data.size(), 16) + "\r\n" + data + "\r\n");
    socket.flush();
  };
  auto sent = std::make_shared<int>(0);
  auto timer = new QTimer(&socket);
  QObject::connect(timer, &QTimer::timeout, &socket, [=, &socket] {
    if (*sent == tokens) {
      timer->stop();
      if (drop) {
        socket.abort();
        return;
      }
      send_chunk("data: {\"choices\":[{\"text\":\"\",\"index\":0,\"finish_reason\":\"length\"}]}\n\n");
      send_chunk("data: [DONE]\n\n");
      socket.write("0\r\n\r\n");
      socket.disconnectFromHost();
      return;
    }
    send_chunk("data: {\"choices\":[{\"text\":\" t" + QByteArray::number(*sent) +
               "\",\"index\":0,\"finish_reason\":null}]}\n\n");
    ++*sent;
  });
  timer->start(gap_ms);
}

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
