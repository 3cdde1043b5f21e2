// Scripted HTTP servers on 127.0.0.1 for the remote client's tests: a QTcpServer that hands
// each complete request (its first line) to a script, and the answers a real server gives
// (a plain answer, a chunked completion stream token by token, llama.cpp's metrics). Each
// test's server counts the connections open at once, so a test can see how many streams the
// client really ran together.
#pragma once

#include <QCoreApplication>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTimer>
#include <QUrl>
#include <algorithm>
#include <functional>
#include <memory>

namespace servescope::remote {

// The test's application: the one running (a GUI test's), else one made here.
inline QCoreApplication& app() {
  if (QCoreApplication* running = QCoreApplication::instance()) return *running;
  static int argc = 1;
  static char name[] = "remote_test";
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
        peak_connections_ = std::max(peak_connections_, ++open_connections_);
        QObject::connect(socket, &QTcpSocket::disconnected, socket, [this, socket] {
          --open_connections_;
          socket->deleteLater();
        });
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
  // No new connections from now on (a stopped server's listener); those open stay open.
  void stop_listening() { server_.close(); }
  // The most connections the client held open at once.
  int peak_connections() const { return peak_connections_; }

 private:
  Script script_;
  int open_connections_ = 0;
  int peak_connections_ = 0;
  QTcpServer server_;
};

inline void answer(QTcpSocket& socket, int status, const QByteArray& type, const QByteArray& body) {
  socket.write("HTTP/1.1 " + QByteArray::number(status) + " X\r\nContent-Type: " + type +
               "\r\nContent-Length: " + QByteArray::number(body.size()) + "\r\n\r\n" + body);
}

inline const QByteArray kLlamaMetrics =
    "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total 10\n"
    "llamacpp:tokens_predicted_total 20\nllamacpp:requests_processing 1\n"
    "llamacpp:requests_deferred 0\nllamacpp:n_decode_total 7\n";

// A chunked event stream of `tokens` chunks, each `gap_ms` apart, then [DONE] unless `drop`.
inline void stream_tokens(QTcpSocket& socket, int tokens, int gap_ms, bool drop,
                          const QByteArray& logprobs = {}) {
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
               "\",\"index\":0," + (logprobs.isEmpty() ? QByteArray() : "\"logprobs\":" + logprobs + ",") +
               "\"finish_reason\":null}]}\n\n");
    ++*sent;
  });
  timer->start(gap_ms);
}

}  // namespace servescope::remote
