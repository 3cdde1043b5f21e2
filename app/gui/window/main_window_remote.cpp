// Remote mode: the window attached to a real serving engine over HTTP (llama-server, vLLM).
// The user's prompt and the classmates go to the server as streaming requests; the Batching,
// KV cache and Phases panels show what ServeScope measures and what the server reports, and
// the other panels why their figures need the engine's insides. The local engine stays loaded,
// idle, and is back when the window disconnects.
#include <QAction>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QInputDialog>
#include <QLabel>
#include <QMessageBox>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>

#include "app/gui/lesson_ui/pinned_figures.h"
#include "app/gui/remote/remote_connection.h"
#include "app/gui/remote/remote_views.h"
#include "app/gui/window/main_window.h"
#include "app/gui/window/model_picker.h"
#include "app/gui/window/token_chips.h"

namespace servescope::gui {

namespace {

const char* const kServerKey = "remote/server";

}  // namespace

bool MainWindow::remote_mode() const { return remote_ != nullptr; }

bool MainWindow::remote_connected() const { return remote_ && remote_->connected(); }

void MainWindow::ask_for_server() {
  QSettings settings;
  const QString last = remember_settings_
                           ? settings.value(kServerKey, "http://127.0.0.1:8080").toString()
                           : QStringLiteral("http://127.0.0.1:8080");
  bool ok = false;
  const QString text = QInputDialog::getText(
      this, tr("Connect to a server"),
      tr("The address of an OpenAI-compatible server (llama.cpp's llama-server started with "
         "--metrics --slots, or vLLM):"),
      QLineEdit::Normal, last, &ok);
  if (!ok || text.trimmed().isEmpty()) return;
  asked_for_server_ = true;
  connect_to_server(QUrl::fromUserInput(text.trimmed()));
  asked_for_server_ = false;
}

void MainWindow::connect_to_server(const QUrl& server) {
  if (refused_in_replay()) return;
  if (!server.isValid() || server.host().isEmpty() ||
      (server.scheme() != "http" && server.scheme() != "https")) {
    const QString text =
        tr("Not a server's address: \"%1\". Give one such as http://127.0.0.1:8080.")
            .arg(server.toString());
    show_message(text, true);
    statusBar()->showMessage(text, 15000);
    return;
  }
  if (generating()) stop();
  if (!remote_) {
    remote_ = new RemoteConnection(this);
    connect(remote_, &RemoteConnection::connected_to, this, [this](const QString& description) {
      show_message(tr("Connected to %1. Generate sends your prompt and the classmates there.")
                       .arg(description),
                   false);
      update_actions();
      Q_EMIT remote_connected_to(description);
    });
    connect(remote_, &RemoteConnection::connection_failed, this, [this](const QString& why) {
      disconnect_from_server();
      const QString text = tr("Could not attach to the server: %1. The panels show the local "
                              "engine again.")
                               .arg(why);
      on_failed(text);
      // Where a person looks after pressing Connect, not only the controls column's foot.
      statusBar()->showMessage(text, 15000);
      if (asked_for_server_) {
        auto* box = new QMessageBox(QMessageBox::Warning, tr("Connect to a server"), text,
                                    QMessageBox::Ok, this);
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->open();  // not exec(): the window keeps running
      }
    });
    connect(remote_, &RemoteConnection::own_token, this, [this](const remote::RemoteToken& sent) {
      GeneratedToken token;
      token.id = -1;  // the server's vocabulary: its ids are not this model's
      token.text = sent.text;
      token.probability = sent.probability;
      token.alternatives = sent.alternatives;
      output_chips_->append_tokens({token});
    });
    connect(remote_, &RemoteConnection::own_finished, this,
            [this](GenerationEnd end, const QString& error) {
              if (!error.isEmpty()) on_failed(tr("Your request failed: %1").arg(error));
              update_actions();
              Q_EMIT generation_finished(end);
            });
    connect(remote_, &RemoteConnection::problem, this,
            [this](const QString& why) { show_message(why, true); });
  }
  remote_->set_classmates(classmates());
  remote_->set_continuous_classmates(continuous_classmates_);
  remote_->open(server);
  if (remember_settings_) QSettings().setValue(kServerKey, server.toString());
  show_message(tr("Connecting to %1...").arg(server.toString()), false);
  enable_local_engine_controls(false);
  remote_shown_.fill(0);
  update_status();
  update_actions();
}

void MainWindow::disconnect_from_server() {
  if (!remote_) return;
  const bool was_generating = remote_->generating();
  remote_->stop();
  remote_->deleteLater();  // its session's streams end with it
  remote_ = nullptr;
  output_chips_->clear_tokens();  // the server's text is not the local engine's
  if (was_generating) Q_EMIT generation_finished(GenerationEnd::kStopped);
  for (const PanelId id : kAllPanels) panels_->panel(id)->set_remote_view(std::nullopt);
  enable_local_engine_controls(true);
  update_status();
  show_message({}, false);
  update_actions();
}

void MainWindow::generate_remote() {
  if (!remote_->connected()) {
    show_message(tr("Still connecting to the server; Generate when it answers."), false);
    return;
  }
  output_chips_->clear_tokens();
  show_message({}, false);
  RemoteSampling sampling;
  sampling.greedy = greedy();
  sampling.temperature = temperature_->value();
  sampling.seed = static_cast<uint64_t>(seed_->value());
  remote_->generate(prompt(), max_tokens(), sampling);
  update_actions();
}

void MainWindow::refresh_remote_panels() {
  if (!remote_) return;
  const uint64_t revision = remote_->folder().revision();
  for (const PanelId id : kAllPanels) {
    // Panels on screen follow the folder; a hidden one catches up when it is shown.
    widgets::PanelView* view = panels_->panel(id);
    uint64_t& shown = remote_shown_[static_cast<size_t>(id)];
    if (shown == revision || !view->isVisible()) continue;
    view->set_remote_view(remote_view_for(id, remote_->folder()));
    shown = revision;
  }
}

// The status bar's left part in remote mode: the server and its model.
void MainWindow::update_remote_status() {
  const RemoteFolder& folder = remote_->folder();
  status_device_->setText(remote_->connected()
                              ? tr("Server: %1").arg(folder.server().url.toString())
                              : tr("Connecting to %1").arg(folder.server().url.toString()));
  status_device_->setToolTip(tr("Remote mode: requests go to this server; File > Disconnect from "
                                "the server returns to the local engine."));
  status_model_->setText(folder.server().model.isEmpty()
                             ? QString()
                             : tr("Model on the server: %1").arg(folder.server().model));
  status_kv_->clear();
  status_batching_->clear();
  status_rate_->setText(tr("%1 tokens received, %2 streams open")
                            .arg(folder.tokens_received())
                            .arg(folder.streams_open()));
}

void MainWindow::enable_local_engine_controls(bool enabled) {
  // What changes the local engine does nothing to the server's.
  for (QWidget* control : std::initializer_list<QWidget*>{
           model_picker_, backend_picker_, kv_picker_, weights_picker_, batching_picker_,
           batch_wait_, kv_budget_, activations_picker_, speed_picker_, samples_}) {
    if (control) control->setEnabled(enabled);
  }
  open_action_->setEnabled(enabled);
  // A pinned run is the local engine's figures: nothing of a server's to pin or compare.
  pinned_->pin_action()->setEnabled(enabled);
}

}  // namespace servescope::gui
