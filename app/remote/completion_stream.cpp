#include "app/remote/completion_stream.h"

#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace servescope::remote {

namespace {

using nlohmann::json;

// The token's log-probability in either shape servers stream it: OpenAI's completions
// (`logprobs.token_logprobs[0]`) or the chat-style list llama.cpp also writes
// (`logprobs.content[0].logprob`).
std::optional<double> token_probability(const json& choice) {
  if (!choice.contains("logprobs") || !choice["logprobs"].is_object()) return std::nullopt;
  const json& logprobs = choice["logprobs"];
  if (logprobs.contains("token_logprobs") && logprobs["token_logprobs"].is_array() &&
      !logprobs["token_logprobs"].empty() && logprobs["token_logprobs"][0].is_number()) {
    return std::exp(logprobs["token_logprobs"][0].get<double>());
  }
  if (logprobs.contains("content") && logprobs["content"].is_array() &&
      !logprobs["content"].empty() && logprobs["content"][0].is_object() &&
      logprobs["content"][0].contains("logprob") &&
      logprobs["content"][0]["logprob"].is_number()) {
    return std::exp(logprobs["content"][0]["logprob"].get<double>());
  }
  return std::nullopt;
}

// The likeliest tokens at the position, most likely first: OpenAI's `top_logprobs[0]` (token to
// log-probability) or llama.cpp's `content[0].top_logprobs` (a list of {token, logprob}).
std::vector<std::pair<std::string, double>> token_alternatives(const json& choice) {
  std::vector<std::pair<std::string, double>> out;
  if (!choice.contains("logprobs") || !choice["logprobs"].is_object()) return out;
  const json& logprobs = choice["logprobs"];
  if (logprobs.contains("top_logprobs") && logprobs["top_logprobs"].is_array() &&
      !logprobs["top_logprobs"].empty() && logprobs["top_logprobs"][0].is_object()) {
    for (const auto& [token, logprob] : logprobs["top_logprobs"][0].items()) {
      if (logprob.is_number()) out.emplace_back(token, std::exp(logprob.get<double>()));
    }
  } else if (logprobs.contains("content") && logprobs["content"].is_array() &&
             !logprobs["content"].empty() && logprobs["content"][0].is_object() &&
             logprobs["content"][0].contains("top_logprobs") &&
             logprobs["content"][0]["top_logprobs"].is_array()) {
    for (const json& entry : logprobs["content"][0]["top_logprobs"]) {
      if (entry.is_object() && entry.contains("token") && entry["token"].is_string() &&
          entry.contains("logprob") && entry["logprob"].is_number()) {
        out.emplace_back(entry["token"].get<std::string>(),
                         std::exp(entry["logprob"].get<double>()));
      }
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

}  // namespace

QUrl endpoint(const QUrl& server, const QString& path) {
  QUrl url = server;
  url.setPath(path);
  return url;
}

QNetworkReply* post_on_own_connection(QObject* parent, const QNetworkRequest& request,
                                      const QByteArray& body, int timeout_ms) {
  auto* manager = new QNetworkAccessManager(parent);
  manager->setTransferTimeout(timeout_ms);
  QNetworkReply* reply = manager->post(request, body);
  QObject::connect(reply, &QNetworkReply::finished, manager, &QObject::deleteLater);
  return reply;
}

std::string network_problem(QNetworkReply& reply, const QUrl& server, double timeout_s) {
  const std::string where = server.toString().toStdString();
  switch (reply.error()) {
    case QNetworkReply::ConnectionRefusedError:
      return "could not connect to " + where +
             ": the connection was refused (is the server running on that port?)";
    case QNetworkReply::HostNotFoundError:
      return "could not connect to " + where + ": no such host";
    case QNetworkReply::OperationCanceledError:
    case QNetworkReply::TimeoutError:
      return "no answer from " + where + " within " +
             std::to_string(static_cast<int>(timeout_s)) + " s";
    case QNetworkReply::RemoteHostClosedError:
      return "the server at " + where + " closed the connection mid-answer";
    default:
      break;
  }
  const int status = reply.attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
  const QString path = reply.url().path();
  if (status == 404 || status == 405) {
    return "not an OpenAI-compatible server: " + where + " answered " + std::to_string(status) +
           " to " + (reply.operation() == QNetworkAccessManager::GetOperation ? "GET " : "POST ") +
           path.toStdString();
  }
  return "the request to " + where + " failed: " + reply.errorString().toStdString();
}

std::string metrics_unavailable(QNetworkReply& reply) {
  const int status = reply.attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
  if (status == 404 || status == 501) {
    return "the server has no /metrics (llama-server: start it with --metrics), so its own "
           "figures are missing";
  }
  return "reading /metrics failed: " + reply.errorString().toStdString();
}

CompletionChunk read_completion_chunk(const std::string& data) {
  const json chunk = json::parse(data, nullptr, false);
  if (chunk.is_discarded() || !chunk.is_object()) {
    throw NotOpenAiError("not an OpenAI-compatible server: its stream holds '" +
                         data.substr(0, 60) + "', not a completion chunk");
  }
  CompletionChunk out;
  if (chunk.contains("usage") && chunk["usage"].is_object()) {
    const json& usage = chunk["usage"];
    if (usage.contains("completion_tokens") && usage["completion_tokens"].is_number_integer()) {
      out.completion_tokens = usage["completion_tokens"].get<int64_t>();
    }
    if (usage.contains("prompt_tokens") && usage["prompt_tokens"].is_number_integer()) {
      out.prompt_tokens = usage["prompt_tokens"].get<int64_t>();
    }
  }
  if (!chunk.contains("choices") || !chunk["choices"].is_array() || chunk["choices"].empty()) {
    if (chunk.contains("usage")) return out;  // the usage-only chunk that ends a stream
    throw NotOpenAiError("not an OpenAI-compatible server: a stream chunk without choices");
  }
  const json& choice = chunk["choices"][0];
  if (!choice.is_object() || (choice.contains("text") && !choice["text"].is_string())) {
    throw NotOpenAiError("not an OpenAI-compatible server: a completion choice without text");
  }
  out.text = choice.value("text", std::string());
  if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) {
    out.finish_reason = choice["finish_reason"].get<std::string>();
  }
  // One chunk per token (a token whose bytes end mid-character streams empty text); a last
  // chunk with no text only says why the stream ended.
  out.token = !(out.text.empty() && out.finish_reason);
  if (out.token) {
    out.probability = token_probability(choice);
    out.alternatives = token_alternatives(choice);
  }
  return out;
}

}  // namespace servescope::remote
