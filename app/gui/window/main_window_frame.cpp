// The frame pump: once a frame (16 ms) the engine's telemetry is drained and folded, the
// panels whose inputs changed (the folder's news, a newer attention capture, the revisions of
// the engine client's state and of the quantisation lab) get a snapshot, and the chips and
// status bar catch up.
#include <QLabel>
#include <QScrollArea>
#include <QLocale>
#include <QTabWidget>
#include <QTimer>
#include <algorithm>
#include <cmath>

#include "app/cli/commands.h"
#include "app/gui/engine_bridge/engine_client.h"
#include "app/gui/lesson_ui/learn_pane.h"
#include "app/gui/lesson_ui/lesson_ui.h"
#include "app/gui/lesson_ui/pinned_figures.h"
#include "app/gui/recording/recording_mark.h"
#include "app/gui/recording/replay_player.h"
#include "app/gui/recording/trace_recorder.h"
#include "app/gui/window/main_window.h"
#include "app/gui/window/model_picker.h"
#include "app/gui/window/settled_choice.h"
#include "app/gui/window/token_chips.h"
#include "app/gui/window/token_display.h"
#include "app/gui/window/window_text.h"
#include "app/lessons/progress_store.h"
#include "engine/compute/devices.h"
#include "engine/model/model.h"
#include "widgets/quantisation_panel.h"
#include "widgets/theme.h"

namespace servescope::gui {

namespace {

constexpr double kStatusEveryMs = 250.0;

}  // namespace

void MainWindow::on_frame() {
  const double now = static_cast<double>(clock_.nsecsElapsed()) / 1e6;
  if (sender() == frame_timer_) {
    if (last_frame_ms_ >= 0.0) frame_stats_.add(now - last_frame_ms_);
    last_frame_ms_ = now;
  }
  refresh_remote_panels();
  if (!queue_) return;
  // What this frame costs the GUI thread: draining, folding, snapshots (painting follows).
  struct WorkTimer {
    MainWindow& w;
    double start_ms;
    bool counted;
    ~WorkTimer() {
      if (counted) w.frame_work_.add(static_cast<double>(w.clock_.nsecsElapsed()) / 1e6 - start_ms);
    }
  } work_timer{*this, now, sender() == frame_timer_};
  const std::vector<telemetry::TelemetryItem> items = queue_->drain();
  if (recorder_) recorder_->record_telemetry(items, now);
  if (!items.empty()) folder_.fold(items, now);
  PanelMask changed = panels_with_news(folder_.revisions(), folder_seen_);
  if (!engine_info()) return;  // the engine is gone: its last records are folded
  const EngineState& engine = engine_->state();
  if (engine.info->attention) {
    if (auto sample = engine.info->attention->take_newer(attention_seen_)) {
      attention_ = std::move(*sample);
      changed |= panel_bit(PanelId::kAttention);
    }
  }
  if (std::exchange(shown_info_revision_, engine.info_revision) != engine.info_revision) {
    changed |= panel_bit(PanelId::kKvCache);  // memory measured
  }
  if (std::exchange(shown_sweep_revision_, engine.sweep_revision) != engine.sweep_revision) {
    changed |= panel_bit(PanelId::kBatching);
  }
  if (std::exchange(shown_quant_revision_, quant_lab_->revision()) != quant_lab_->revision()) {
    changed |= panel_bit(PanelId::kQuantisation);
  }
  if (std::exchange(shown_collecting_revision_, engine.collecting_revision) !=
      engine.collecting_revision) {
    changed |= panel_bit(PanelId::kBatching);
  }
  if (const Speed pace = speed(); pace != panels_speed_) {  // their "times are real" note
    panels_speed_ = pace;
    changed |= panel_bit(PanelId::kBatching) | panel_bit(PanelId::kPhases);
  }
  panels_->refresh(
      PanelFeed{folder_, *engine.info, now, &attention_, quant_lab() ? &*quant_lab() : nullptr,
                &quant_run(), quant_types(), &engine.batch_sweep, collecting_status(),
                &quant_limits(), panels_speed_, engine.memory, engine.batching},
      changed);
  update_generated_chips();
  update_sample_texts();
  update_kv_status();
  if (now - last_status_ms_ >= kStatusEveryMs) {
    last_status_ms_ = now;
    update_status();
    if (overlay_->isVisible()) update_overlay();
  }
  Q_EMIT frame_folded();
}

void MainWindow::update_generated_chips() {
  // The user's tokens, with their probabilities, as the engine reported them.
  if (folder_.watched_request() != user_request() || !engine_info()->tokenizer) return;
  const std::vector<telemetry::TokenRecord>& records = folder_.watched_tokens();
  const auto shown = static_cast<size_t>(output_chips_->tokens().size());
  if (records.size() <= shown) return;
  const Tokenizer& tokenizer = *engine_info()->tokenizer;
  QVector<GeneratedToken> fresh;
  for (size_t i = shown; i < records.size(); ++i) {
    const telemetry::TokenRecord& r = records[i];
    GeneratedToken token;
    token.id = r.id;
    token.text = token_display_text(tokenizer, r.id);
    token.probability = r.prob;
    for (const telemetry::TokenAlternative& a : r.top) {
      token.alternatives.push_back({token_display_text(tokenizer, a.id), a.prob});
    }
    fresh.push_back(token);
  }
  output_chips_->append_tokens(fresh);
}

// The further samples of the user's prompt, each as its continuation once it finished: the
// chips above show the first sample's tokens as they come.
void MainWindow::update_sample_texts() {
  const QVector<qint64>& samples = engine_->state().user_samples;
  if (samples.isEmpty() || !engine_info() || !engine_info()->tokenizer) {
    samples_scroll_->hide();
    samples_text_revision_ = 0;  // made again when samples come back
    return;
  }
  // Requests folded so far and samples named: 1 or more, so 0 never matches.
  const uint64_t revision =
      folder_.revisions().requests + static_cast<uint64_t>(samples.size());
  if (revision == samples_text_revision_) return;
  samples_text_revision_ = revision;
  const Tokenizer& tokenizer = *engine_info()->tokenizer;
  QStringList lines;
  for (qsizetype i = 0; i < samples.size(); ++i) {
    const auto& requests = folder_.requests();
    const auto it = std::find_if(requests.rbegin(), requests.rend(), [&](const auto& r) {
      return r.request_id == samples[i];
    });
    QString text;
    if (it == requests.rend()) {
      text = tr("generating...");
    } else {
      const int32_t end_of_text = tokenizer.vocabulary().eos_id;
      for (const int32_t id : it->output_ids) {
        if (id != end_of_text) text += token_display_text(tokenizer, id);
      }
    }
    lines << tr("<b>Sample %1</b> (request %2): %3")
                 .arg(i + 2)
                 .arg(samples[i])
                 .arg(text.toHtmlEscaped());
  }
  samples_text_->setText(lines.join(QStringLiteral("<br>")));
  samples_scroll_->show();
}

// Every frame, with the panels: the KV cache panel's heading and this text read the same
// folder state, so they never show two figures for the bytes held.
void MainWindow::update_kv_status() {
  if (remote_) return;  // the server's cache is on the KV panel
  if (!engine_info()) return;
  const QString text =
      engine_info()->keep_kv
          ? tr("KV %1: %2 / %3")
                .arg(kv_type_label(engine_info()->kv_type), format_bytes(folder_.kv_bytes_used()),
                     format_bytes(engine_info()->kv_bytes_total))
          : tr("KV cache off: every token recomputes its context");
  if (status_kv_->text() != text) status_kv_->setText(text);  // no relayout when unchanged
}

void MainWindow::update_status() {
  if (remote_) return update_remote_status();
  if (!engine_info()) return;
  const EngineInfo& info = *engine_info();
  const double now = static_cast<double>(clock_.nsecsElapsed()) / 1e6;
  status_device_->setText(device_label(info));
  status_device_->setToolTip(device_tooltip(info));
  const QString name = name_without_note(info.model_name);
  status_model_->setText(
      (info.weight_type.isEmpty()
           ? tr("%1: %2 parameters, %3").arg(name)
           : tr("%1 as %2: %3 parameters, %4").arg(name, info.weight_type.toUpper()))
          .arg(count_text(info.parameters))
          .arg(format_bytes(info.weight_bytes)));
  status_model_->setToolTip(
      tr("The model, its parameter count (%1) and the bytes of its weights\n%2")
          .arg(QLocale::system().toString(static_cast<qlonglong>(info.parameters)),
               info.provenance));
  update_kv_status();
  const QString collecting = collecting_status();
  status_batching_->setText(collecting.isEmpty()
                                ? batching_text(engine_batching())
                                : tr("%1: %2").arg(batching_text(engine_batching()), collecting));
  status_rate_->setText(
      tr("%1 tokens/s").arg(QLocale::system().toString(folder_.tokens_per_s(now), 'f', 0)));
}

void MainWindow::update_overlay() {
  const telemetry::TelemetryQueue* queue = queue_ ? queue_.get() : nullptr;
  overlay_->setText(tr("frame p50 %1 ms  p99 %2 ms  (%3 frames)\n"
                       "GUI work per frame p50 %6 ms  p99 %7 ms\n"
                       "steps %4  records dropped %5")
                        .arg(frame_stats_.p50(), 0, 'f', 1)
                        .arg(frame_stats_.p99(), 0, 'f', 1)
                        .arg(frame_stats_.count())
                        .arg(folder_.counts().steps)
                        .arg(queue ? queue->dropped() : 0)
                        .arg(frame_work_.p50(), 0, 'f', 2)
                        .arg(frame_work_.p99(), 0, 'f', 2));
  overlay_->adjustSize();
  overlay_->move(tabs_->width() - overlay_->width() - 8, 32);
  overlay_->raise();
}

}  // namespace servescope::gui
