#include "app/gui/remote/remote_connection.h"

#include <fstream>
#include <iterator>
#include <numeric>
#include <sstream>

#include "app/common/data_files.h"
#include "engine/serving/load_generator.h"

namespace servescope::gui {

namespace {

constexpr double kClassmateTemperature = 0.8;  // as the local classmates

std::vector<std::string> bundled_story_words() {
  std::ifstream in(app::bundled_eval_text_path(), std::ios::binary);
  std::vector<std::string> words{std::istream_iterator<std::string>(in),
                                 std::istream_iterator<std::string>()};
  if (words.empty()) {
    std::istringstream fallback("Once upon a time there was a little girl who liked to read.");
    words.assign(std::istream_iterator<std::string>(fallback),
                 std::istream_iterator<std::string>());
  }
  return words;
}

}  // namespace

std::vector<remote::RemotePrompt> classmate_prompts(const std::vector<std::string>& words,
                                                    uint64_t seed, int count) {
  serving::WorkloadSpec spec;
  spec.clients = count;
  spec.prompt_tokens = {8, 40};
  spec.output_tokens = {24, 96};
  spec.seed = seed;
  spec.text_ids.resize(words.size());
  std::iota(spec.text_ids.begin(), spec.text_ids.end(), 0);
  spec.vocab_size = static_cast<int32_t>(words.size());
  std::vector<remote::RemotePrompt> prompts;
  for (const serving::SimulatedRequest& request : serving::make_workload(spec)) {
    remote::RemotePrompt prompt;
    for (const int32_t word : request.prompt_ids) {
      if (!prompt.text.empty()) prompt.text += ' ';
      prompt.text += words[static_cast<size_t>(word)];
    }
    prompt.max_tokens = request.max_tokens;
    prompt.temperature = kClassmateTemperature;
    prompt.seed = seed * 7919 + prompts.size();
    prompt.ignore_eos = true;
    prompts.push_back(std::move(prompt));
  }
  return prompts;
}

RemoteConnection::RemoteConnection(QObject* parent, double timeout_s)
    : QObject(parent), words_(bundled_story_words()), timeout_s_(timeout_s) {
  qRegisterMetaType<remote::RemoteToken>();
  qRegisterMetaType<remote::RemoteRequestEnd>();
  qRegisterMetaType<remote::ServerPoll>();
  qRegisterMetaType<remote::ServerIdentity>();
  thread_.setObjectName(QStringLiteral("servescope-remote"));
  thread_.start();
}

RemoteConnection::~RemoteConnection() {
  if (session_) session_->deleteLater();  // on its thread, before the thread ends
  thread_.quit();
  thread_.wait();
}

void RemoteConnection::open(const QUrl& server) {
  if (session_) {
    session_->disconnect(this);
    session_->deleteLater();
  }
  connected_ = false;
  own_.reset();
  classmates_live_.clear();
  remote::ServerIdentity identity;
  identity.url = server;
  folder_.reset(identity);
  session_ = new remote::RemoteSession(timeout_s_);
  session_->moveToThread(&thread_);
  connect(session_, &remote::RemoteSession::connected, this, &RemoteConnection::on_connected);
  connect(session_, &remote::RemoteSession::connection_failed, this,
          &RemoteConnection::connection_failed);
  connect(session_, &remote::RemoteSession::request_sent, this,
          [this](qint64 request, double at_ms) {
            folder_.on_sent(request, own_ && *own_ == request, at_ms);
          });
  connect(session_, &remote::RemoteSession::token_arrived, this, &RemoteConnection::on_token);
  connect(session_, &remote::RemoteSession::request_ended, this, &RemoteConnection::on_end);
  connect(session_, &remote::RemoteSession::server_polled, this,
          [this](const remote::ServerPoll& poll) { folder_.on_poll(poll); });
  connect(session_, &remote::RemoteSession::metrics_problem, this, [this](const QString& why) {
    folder_.on_metrics_problem(why);
    Q_EMIT problem(why);
  });
  QMetaObject::invokeMethod(session_, [session = session_, server] { session->open(server); });
}

void RemoteConnection::on_connected(remote::ServerIdentity server) {
  connected_ = true;
  // llama-server names its model by the file's path: the file's name says it.
  if (server.model.contains(QLatin1Char('/'))) server.model = server.model.section('/', -1);
  folder_.reset(server);
  Q_EMIT connected_to(server.model.isEmpty()
                          ? server.url.toString()
                          : tr("%1 (model %2)").arg(server.url.toString(), server.model));
}

void RemoteConnection::generate(const QString& prompt, int max_tokens,
                                const RemoteSampling& sampling) {
  if (!connected_ || own_) return;
  remote::RemotePrompt request;
  request.request = next_request_++;
  request.text = prompt.toStdString();
  request.max_tokens = max_tokens;
  request.temperature = sampling.greedy ? 0.0 : sampling.temperature;
  request.seed = sampling.seed;
  request.logprobs = true;
  own_ = request.request;
  send(request);
  top_up_classmates();
}

void RemoteConnection::set_classmates(int count) {
  classmates_ = count;
  top_up_classmates();
}

void RemoteConnection::set_continuous_classmates(bool continuous) {
  continuous_ = continuous;
  top_up_classmates();
}

void RemoteConnection::stop() {
  if (session_) QMetaObject::invokeMethod(session_, [session = session_] { session->cancel_all(); });
}

void RemoteConnection::send(const remote::RemotePrompt& prompt) {
  QMetaObject::invokeMethod(session_, [session = session_, prompt] { session->send(prompt); });
}

void RemoteConnection::top_up_classmates() {
  // Classmates come while the user's request runs (or always, once started, when continuous).
  if (!connected_ || !(own_ || (continuous_ && next_request_ > 1))) return;
  while (static_cast<int>(classmates_live_.size()) < classmates_) send_classmate();
}

void RemoteConnection::send_classmate() {
  if (classmate_queue_.empty()) {
    for (remote::RemotePrompt& p : classmate_prompts(words_, classmate_seed_++, 16)) {
      classmate_queue_.push_back(std::move(p));
    }
  }
  remote::RemotePrompt prompt = std::move(classmate_queue_.front());
  classmate_queue_.pop_front();
  prompt.request = next_request_++;
  classmates_live_.insert(prompt.request);
  send(prompt);
}

void RemoteConnection::on_token(const remote::RemoteToken& token) {
  folder_.on_token(token);
  if (own_ && token.request == *own_) Q_EMIT own_token(token);
}

void RemoteConnection::on_end(const remote::RemoteRequestEnd& end) {
  folder_.on_end(end);
  const int64_t id = end.record.request_id;
  const QString error = QString::fromStdString(end.error);
  if (own_ && id == *own_) {
    own_.reset();
    const GenerationEnd why = !error.isEmpty() ? GenerationEnd::kFailed
                              : end.cancelled  ? GenerationEnd::kStopped
                                               : generation_end_of(end.record.finish_reason);
    Q_EMIT own_finished(why, error);
    return;
  }
  classmates_live_.erase(id);
  if (!error.isEmpty()) {
    Q_EMIT problem(tr("A classmate's request failed: %1").arg(error));
    return;  // no new classmate after a failure: the next Generate tries again
  }
  if (!end.cancelled) top_up_classmates();
}

}  // namespace servescope::gui
