// The load client against a real serving engine: llama.cpp's llama-server (tools/llama_server.sh
// builds it into a cache folder), started here on 127.0.0.1 with the bundled model on a free
// port and stopped after. Without one the tests skip, saying why; tools/setup.sh test builds it
// and sets SERVESCOPE_REQUIRE_LLAMA_SERVER, so in CI they always run. The streamed tokens are the server's own non-streamed completion,
// each request's token count is the server's usage count, and the counters the panels read
// from /metrics grow by exactly the known load.
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QProcess>
#include <QTcpServer>
#include <QThread>
#include <cstdlib>
#include <filesystem>
#include <gtest/gtest.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "app/remote/remote_load.h"
#include "app/remote/remote_session.h"
#include "tests/support/cli_runner.h"

namespace servescope::remote {
namespace {

using nlohmann::json;

QCoreApplication& app() {
  static int argc = 1;
  static char name[] = "llama_server_test";
  static char* argv[] = {name, nullptr};
  static QCoreApplication instance(argc, argv);
  return instance;
}

// Where tools/llama_server.sh puts it (SERVESCOPE_LLAMA_SERVER names another).
std::filesystem::path llama_server_path() {
  if (const char* path = std::getenv("SERVESCOPE_LLAMA_SERVER")) return path;
  std::filesystem::path cache;
  if (const char* c = std::getenv("SERVESCOPE_CACHE")) {
    cache = c;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME")) {
    cache = std::filesystem::path(xdg) / "servescope";
  } else {
    cache = std::filesystem::path(std::getenv("HOME") ? std::getenv("HOME") : "/") / ".cache" /
            "servescope";
  }
  return cache / "llama-server-node-llama-cpp-3.21.1" / "bin" / "llama-server";
}

quint16 free_port() {
  QTcpServer probe;
  probe.listen(QHostAddress::LocalHost, 0);
  return probe.serverPort();
}

// GET or POST on the server, waited for; the body, or empty on failure.
QByteArray http(QNetworkAccessManager& network, const QUrl& url, const QByteArray* post = nullptr) {
  QNetworkRequest request(url);
  request.setHeader(QNetworkRequest::ContentTypeHeader, "application/json");
  request.setTransferTimeout(30000);
  QNetworkReply* reply = post != nullptr ? network.post(request, *post) : network.get(request);
  QEventLoop wait;
  QObject::connect(reply, &QNetworkReply::finished, &wait, &QEventLoop::quit);
  wait.exec();
  const QByteArray body = reply->error() == QNetworkReply::NoError ? reply->readAll() : QByteArray();
  reply->deleteLater();
  return body;
}

class LlamaServer : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    app();
    const std::filesystem::path server = llama_server_path();
    if (!std::filesystem::exists(server)) {
      const std::string why = "no llama-server at " + server.string() +
                              " (tools/llama_server.sh builds it once per machine)";
      // README's test command builds it and says so: there a missing server is a failure.
      if (std::getenv("SERVESCOPE_REQUIRE_LLAMA_SERVER") != nullptr) {
        failed_to_start_ = why;
      } else {
        skip_reason_ = why;
      }
      return;
    }
    const quint16 port = free_port();
    url_ = QUrl(QString("http://127.0.0.1:%1").arg(port));
    process_ = new QProcess;
    process_->setProcessChannelMode(QProcess::MergedChannels);
    process_->start(QString::fromStdString(server.string()),
                    {"-m", SERVESCOPE_BUNDLED_MODEL, "--host", "127.0.0.1", "--port",
                     QString::number(port), "--metrics", "--slots", "-np", "4", "-c", "2048",
                     "-t", "2", "--no-webui"});
    QNetworkAccessManager network;
    QElapsedTimer clock;
    clock.start();
    while (clock.elapsed() < 60000) {
      if (http(network, QUrl(url_.toString() + "/health")).contains("ok")) return;
      if (process_->state() == QProcess::NotRunning) break;
      QThread::msleep(100);
    }
    skip_reason_ = "";
    failed_to_start_ = "llama-server did not become ready: " +
                       process_->readAll().right(2000).toStdString();
  }

  static void TearDownTestSuite() {
    if (process_ == nullptr) return;
    process_->terminate();
    if (!process_->waitForFinished(10000)) process_->kill();
    process_->waitForFinished(5000);
    delete process_;
    process_ = nullptr;
  }

  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    ASSERT_TRUE(failed_to_start_.empty()) << failed_to_start_;
  }

  static ServerMetrics metrics() {
    QNetworkAccessManager network;
    const QByteArray text = http(network, QUrl(url_.toString() + "/metrics"));
    return read_server_metrics({text.constData(), size_t(text.size())});
  }

  static RemoteLoadOptions options() {
    RemoteLoadOptions o;
    o.server = url_;
    o.timeout_s = 60;
    o.metrics_poll_ms = 20;  // the load below runs for a tenth of a second or so
    return o;
  }

  static inline QProcess* process_ = nullptr;
  static inline QUrl url_;
  static inline std::string skip_reason_;
  static inline std::string failed_to_start_;
};

// Token ids of the bundled model's vocabulary (below its 4,096 - 3 specials).
std::vector<int32_t> prompt_ids(int32_t first, int count) {
  std::vector<int32_t> ids{1};  // BOS
  for (int i = 0; i < count; ++i) ids.push_back(300 + (first + 37 * i) % 3000);
  return ids;
}

TEST_F(LlamaServer, StreamedTokensAreTheServersOwnCompletion) {
  const std::vector<int32_t> prompt = prompt_ids(5, 20);
  const json body = {{"prompt", prompt}, {"max_tokens", 24}, {"temperature", 0.0},
                     {"ignore_eos", true}, {"stream", false}};
  const QByteArray post = QByteArray::fromStdString(body.dump());
  QNetworkAccessManager network;
  const json whole = json::parse(http(network, QUrl(url_.toString() + "/v1/completions"), &post).toStdString());
  const std::string expected = whole["choices"][0]["text"].get<std::string>();

  const RemoteLoadResult r = run_remote_load(options(), {{0.0, prompt, 24}});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.requests[0].text, expected);
  EXPECT_EQ(r.requests[0].record.token_times_ms.size(), 24u);
  EXPECT_EQ(r.requests[0].completion_tokens, 24);
  EXPECT_EQ(r.requests[0].finish_reason, "length");
}

// A known load: 6 requests at once, different prompts, 48 tokens each. The server's counters
// grow by the tokens the client sent and received, and it ran several at once.
TEST_F(LlamaServer, TheServersCountersGrowByTheKnownLoad) {
  std::vector<serving::SimulatedRequest> load;
  int64_t prompt_tokens = 0;
  for (int i = 0; i < 6; ++i) {
    load.push_back({0.0, prompt_ids(100 + 11 * i, 12 + i), 48});
    prompt_tokens += static_cast<int64_t>(load.back().prompt_ids.size());
  }
  const ServerMetrics before = metrics();
  const RemoteLoadResult r = run_remote_load(options(), load);
  ASSERT_TRUE(r.ok()) << r.error;
  const ServerMetrics after = metrics();
  int64_t received = 0;
  for (const RemoteRequestResult& one : r.requests) {
    received += static_cast<int64_t>(one.record.token_times_ms.size());
    EXPECT_EQ(one.completion_tokens, 48);
  }
  EXPECT_EQ(received, 6 * 48);
  EXPECT_EQ(*after.generated_tokens_total - *before.generated_tokens_total, 6 * 48);
  // Batched: fewer decode calls than tokens (4 slots share a call), whatever the polls saw.
  EXPECT_LT(*after.decode_calls_total - *before.decode_calls_total, 6 * 48 * 0.5);
  EXPECT_EQ(*after.prompt_tokens_total - *before.prompt_tokens_total +
                (*after.prompt_tokens_cached_total - *before.prompt_tokens_cached_total),
            static_cast<double>(prompt_tokens));
  EXPECT_GT(r.server.peak_running, 1.0) << "4 slots: requests ran together";
  // /slots: 4 slots of the model's 256-token context each (llama-server caps the slot's
  // context at the training context), several busy at once, holding prompt and output.
  ASSERT_TRUE(r.server.slots);
  EXPECT_EQ(r.server.slots->slots, 4);
  EXPECT_EQ(r.server.slots->context_tokens, 4 * 256);
  EXPECT_GE(r.server.peak_slots_processing, 2);
  EXPECT_GT(r.server.peak_slot_tokens, 0);
  EXPECT_EQ(r.server.last->kind, ServerKind::kLlamaCpp);
}

// servescope-cli bench --remote: the same JSON keys as the local bench, the client's figures
// measured, the engine's insides null, the server's counters beside them.
TEST_F(LlamaServer, BenchRemoteWritesTheLocalBenchsKeys) {
  const testing_support::CliRun run = testing_support::run_cli(
      "bench --remote " + url_.toString().toStdString() +
      " --clients 4 --prompt-tokens 16 --output-tokens 8 --seed 3");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json doc = json::parse(run.out);
  EXPECT_EQ(doc["backend"], "remote");
  EXPECT_EQ(doc["requests"], 4);
  EXPECT_EQ(doc["output_tokens"], 4 * 8);
  EXPECT_GT(doc["throughput_tokens_per_s"].get<double>(), 0.0);
  EXPECT_GT(doc["ttft_ms"]["p50"].get<double>(), 0.0);
  EXPECT_TRUE(doc["kv_peak_blocks"].is_null());
  EXPECT_EQ(doc["reported_by_the_server"]["generated_tokens_during_run"], 4 * 8);
  EXPECT_EQ(doc["reported_by_the_server"]["kind"], "llama.cpp");
}

// The window's session (remote mode): four classmates' text prompts at once. Every stream
// ends as it should, the tokens the window counts are the server's generated-token counter's
// growth between the session's first and last poll, and they ran together: fewer batched
// decode calls than tokens, and several slots busy in one poll.
TEST_F(LlamaServer, TheWindowsSessionCountsWhatTheServerCounts) {
  RemoteSession session(60.0, 20.0);
  std::vector<RemoteRequestEnd> ended;
  std::vector<ServerPoll> polls;
  int64_t tokens = 0;
  bool connected = false;
  QString failure;
  QObject::connect(&session, &RemoteSession::connected, [&] { connected = true; });
  QObject::connect(&session, &RemoteSession::connection_failed,
                   [&](const QString& why) { failure = why; });
  QObject::connect(&session, &RemoteSession::token_arrived, [&](const RemoteToken&) { ++tokens; });
  QObject::connect(&session, &RemoteSession::request_ended,
                   [&](const RemoteRequestEnd& end) { ended.push_back(end); });
  QObject::connect(&session, &RemoteSession::server_polled,
                   [&](const ServerPoll& poll) { polls.push_back(poll); });
  const auto wait_for = [](const std::function<bool()>& done) {
    QElapsedTimer clock;
    clock.start();
    while (!done() && clock.elapsed() < 60000) {
      QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
    }
    return done();
  };
  session.open(url_);
  ASSERT_TRUE(wait_for([&] { return connected && !polls.empty(); })) << failure.toStdString();
  const ServerMetrics before = *polls.back().metrics;
  const char* texts[] = {"Once upon a time", "The little dog ran to the park", "Tom had a red ball",
                         "One day the sun was hot"};
  for (int i = 0; i < 4; ++i) {
    RemotePrompt prompt;
    prompt.request = i;
    prompt.text = texts[i];
    prompt.max_tokens = 64;
    prompt.temperature = 0.8;
    prompt.seed = static_cast<uint64_t>(i);
    prompt.ignore_eos = true;
    session.send(prompt);
  }
  ASSERT_TRUE(wait_for([&] { return ended.size() == 4; }));
  for (const RemoteRequestEnd& end : ended) {
    EXPECT_TRUE(end.error.empty()) << end.error;
    EXPECT_EQ(end.record.token_times_ms.size(), 64u);
    EXPECT_GT(end.record.prompt_tokens, 0) << "the server's usage count of the text's tokens";
  }
  EXPECT_EQ(tokens, 4 * 64);
  const size_t polls_at_end = polls.size();
  ASSERT_TRUE(wait_for([&] { return polls.size() > polls_at_end; }));  // a poll after the load
  const ServerMetrics& after = *polls.back().metrics;
  EXPECT_EQ(*after.generated_tokens_total - *before.generated_tokens_total, 4.0 * 64.0);
  EXPECT_LT(*after.decode_calls_total - *before.decode_calls_total, 4.0 * 64.0 * 0.5);
  int64_t busy = 0;
  for (const ServerPoll& poll : polls) {
    if (poll.slots) busy = std::max(busy, poll.slots->processing);
  }
  EXPECT_GE(busy, 2) << "slots busy together";
}

}  // namespace
}  // namespace servescope::remote
