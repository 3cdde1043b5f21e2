// The parts of talking to an OpenAI-compatible completion server that the load client
// (remote_load.h) and the window's session (remote_session.h) share: where to send, what a
// failed reply means for a person at a laptop, and what one streamed chunk says.
#pragma once

#include <QString>
#include <QUrl>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

class QByteArray;
class QNetworkReply;
class QNetworkRequest;
class QObject;

namespace servescope::remote {

// The server's address with this path ("/v1/completions").
QUrl endpoint(const QUrl& server, const QString& path);

// POSTs on a connection of its own. Qt 6.4 opens at most six HTTP/1.1 connections per host
// and access manager and queues further requests on the client: 16 streams through one manager
// ran six at a time, and the queue was ServeScope's own, not the server's. So each stream gets
// a manager of its own (a child of `parent`, deleted once the reply finished).
QNetworkReply* post_on_own_connection(QObject* parent, const QNetworkRequest& request,
                                      const QByteArray& body, int timeout_ms);

// One sentence for a failed reply: refused, no such host, no answer within the timeout, closed
// mid-answer, not an OpenAI-compatible server (404 / 405), or the error Qt gives.
std::string network_problem(QNetworkReply& reply, const QUrl& server, double timeout_s);

// Why a failed GET /metrics gives no figures: the server has none (404, 501: llama-server
// without --metrics), or the error Qt gives.
std::string metrics_unavailable(QNetworkReply& reply);

// An answer that is not an OpenAI completion stream; what() says what was there.
class NotOpenAiError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One `data:` event of a streamed /v1/completions answer.
struct CompletionChunk {
  bool token = false;  // it carries one generated token (its text may be empty: part of a character)
  std::string text;
  std::optional<std::string> finish_reason;  // the last chunk of a choice says why it ended
  std::optional<double> probability;         // the token's, when logprobs were asked for
  std::vector<std::pair<std::string, double>> alternatives;  // the likeliest tokens, with theirs
  std::optional<int64_t> prompt_tokens;      // from the usage chunk
  std::optional<int64_t> completion_tokens;
};

// NotOpenAiError for anything but a completion chunk (or the usage chunk that ends a stream).
CompletionChunk read_completion_chunk(const std::string& data);

}  // namespace servescope::remote
