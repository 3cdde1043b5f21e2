// Remote mode's controller: the session with a real serving engine on a thread of its own,
// the user's request and the classmates kept streaming beside it, and the folder the panels'
// remote views are made from. The window's only way to the server, as EngineClient is to the
// local engine; every report arrives here as a queued signal.
#pragma once

#include <QObject>
#include <QString>
#include <QThread>
#include <QUrl>
#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "app/gui/engine_bridge/generation_end.h"
#include "app/gui/remote/remote_folder.h"
#include "app/remote/remote_session.h"

namespace servescope::gui {

// How the user's request is sampled on the server (the window's Sampling controls).
struct RemoteSampling {
  bool greedy = true;
  double temperature = 0.8;
  uint64_t seed = 0;
};

class RemoteConnection : public QObject {
  Q_OBJECT

 public:
  explicit RemoteConnection(QObject* parent = nullptr, double timeout_s = 30.0);
  ~RemoteConnection() override;  // every stream ends, the session's thread is joined

  // Connects (connected or connection_failed follows); a second call first ends the first.
  void open(const QUrl& server);
  bool connected() const { return connected_; }
  // The user's request runs (from generate until own_finished).
  bool generating() const { return own_.has_value(); }
  // The user's prompt, as text (the server tokenizes it), with `classmates` streams of the
  // classmates' prompts kept open beside it until it ends (or always, when continuous).
  void generate(const QString& prompt, int max_tokens, const RemoteSampling& sampling);
  void set_classmates(int count);
  void set_continuous_classmates(bool continuous);
  // The user's request and every classmate end now.
  void stop();
  const RemoteFolder& folder() const { return folder_; }

 Q_SIGNALS:
  void connected_to(const QString& description);
  void connection_failed(const QString& message);
  void own_token(const servescope::remote::RemoteToken& token);
  // The user's request ended (kFailed with the error; Stop gives kStopped).
  void own_finished(servescope::gui::GenerationEnd end, const QString& error);
  // A classmate's stream failed, or the server's own figures are missing.
  void problem(const QString& message);

 private:
  void on_connected(remote::ServerIdentity server);
  void on_token(const remote::RemoteToken& token);
  void on_end(const remote::RemoteRequestEnd& end);
  void top_up_classmates();
  void send_classmate();
  void send(const remote::RemotePrompt& prompt);

  QThread thread_;
  remote::RemoteSession* session_ = nullptr;
  RemoteFolder folder_;
  bool connected_ = false;
  std::optional<int64_t> own_;
  std::set<int64_t> classmates_live_;
  int classmates_ = 0;
  bool continuous_ = false;
  int64_t next_request_ = 1;
  uint64_t classmate_seed_ = 1;
  std::deque<remote::RemotePrompt> classmate_queue_;
  std::vector<std::string> words_;  // the bundled stories, word by word: the classmates' prompts
  double timeout_s_;
};

// `count` classmates' prompts: windows of `words` (8 to 40 words, 24 to 96 tokens out) drawn by
// the load generator from `seed` (word positions in place of token ids), so every machine sends
// the same ones and the server tokenizes them with its own model.
std::vector<remote::RemotePrompt> classmate_prompts(const std::vector<std::string>& words,
                                                    uint64_t seed, int count);

}  // namespace servescope::gui
