// What the engine reports, as the window takes it in: a new engine or a failed load, the
// generation's start and end, the sweep's points, the staggered load, progress of long work.
#include <QComboBox>
#include <QFileInfo>
#include <QLabel>
#include <QStatusBar>
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

// The backend a loaded engine runs on; the Vulkan device asked for (-1: the best) is kept.
BackendChoice loaded_backend(const EngineInfo& info, const BackendChoice& asked) {
  return info.backend == "vulkan"
             ? backend_choice_of(compute::BackendKind::kVulkan, device_index(asked),
                                 asked.quantised_activations)
             : backend_choice_of(compute::BackendKind::kCpu, -1, info.quantised_activations);
}

}  // namespace

void MainWindow::on_engine_ready(const EngineInfo& info) {
  // Records of the engine being replaced are folded first, so nothing is lost or mixed.
  on_frame();
  const QString served = info.model_path + "|" + info.backend;
  const bool new_model = served != std::exchange(served_, served);
  queue_ = info.telemetry;  // the frame pump drains the new engine from here on
  model_path_ = info.model_path;
  work_->finish(WorkProgress::Task::kLoad);
  work_->finish(WorkProgress::Task::kWeights);
  if (new_model) {
    quant_lab_->model_changed(info.random_weights);
    if (info.random_weights) {
      // Its variants would compare noise, and the lab's work would slow the timing.
      show_message(
          tr("A timing model: its weights are random, so its speed and memory are real and its "
             "text is meaningless. The quantisation lab does not run on it; load a trained "
             "model for the Quantisation panel."),
          false);
    } else if (current_panel() == PanelId::kQuantisation && !remote_) {
      quant_lab_->panel_shown();
    }
  }
  backend_ = loaded_backend(info, backend_);
  update_activations_picker();
  folder_.reset(FoldFacts{info.kv_blocks, info.block_size, info.kv_bytes_per_block});
  // The client forgot the user's request (a new engine numbers its requests from 0 again:
  // the old id named its typed prompt's prefill or a classmate), the sweep and the load.
  attention_ = {};
  attention_seen_ = 0;
  panels_->reset_counts();
  panels_->reset_views();  // zoom and hidden series were the replaced engine's
  model_picker_->remember(info.model_path);
  show_loaded_in_pickers();
  show_random_weights(info.random_weights);
  on_prompt_edited();
  update_status();
  update_actions();
  Q_EMIT engine_ready(info);
}

void MainWindow::on_load_failed(const QString& message, bool serving) {
  for (const auto task : {WorkProgress::Task::kTimingModel, WorkProgress::Task::kLoad,
                          WorkProgress::Task::kWeights}) {
    work_->finish(task);
  }
  if (serving && engine_info()) {
    backend_ = loaded_backend(*engine_info(), backend_);
    update_activations_picker();
  } else {
    forget_engine();
  }
  show_loaded_in_pickers();
  on_failed(message);
}

void MainWindow::forget_engine() {
  on_frame();  // the last records of the engine that is gone
  queue_.reset();
  served_.clear();
  model_path_.clear();
  quant_lab_->forget();
  status_random_->setVisible(false);
  setWindowTitle(tr("ServeScope"));
  for (QLabel* label : {status_device_, status_kv_, status_rate_, status_batching_}) {
    label->clear();
  }
  status_model_->setText(tr("No model loaded"));
  update_actions();
}

// The pickers show what the engine runs, or nothing where no model is loaded.
void MainWindow::show_loaded_in_pickers() {
  model_picker_->show_loaded(model_path_);
  if (!engine_info()) {
    backend_picker_->setCurrentIndex(-1);
    return;
  }
  const EngineInfo& info = *engine_info();
  const int backend_index =
      backend_picker_->findData(info.backend == "vulkan" ? info.vulkan_device : -1);
  if (backend_index >= 0) backend_picker_->setCurrentIndex(backend_index);
  const int weights_index = weights_picker_->findData(info.weight_type);
  if (weights_index >= 0) weights_picker_->setCurrentIndex(weights_index);
  const int kv_index = kv_picker_->findData(static_cast<int>(info.kv_type));
  if (kv_index >= 0) kv_picker_->setCurrentIndex(kv_index);
}

void MainWindow::connect_staggered_load() {
  connect(engine_, &EngineClient::staggered_load_progress, this,
          [this](qint64 finished, qint64 total) {
            work_->advance(
                WorkProgress::Task::kStaggeredLoad,
                total > 0 ? static_cast<double>(finished) / static_cast<double>(total) : 0.0);
            statusBar()->showMessage(tr("Staggered load: %1 of %2 requests finished (%3 stops)...")
                                         .arg(finished)
                                         .arg(total)
                                         .arg(stop_keys()));
          });
  connect(engine_, &EngineClient::staggered_load_ready, this,
          [this](const StaggeredLoadResult& result) {
            work_->finish(WorkProgress::Task::kStaggeredLoad);
            update_actions();
            statusBar()->showMessage(staggered_load_text(result), 8000);
            Q_EMIT staggered_load_finished();
          });
}

void MainWindow::compare_quantisation(const QStringList& types) {
  if (!player_) quant_lab_->compare(types);  // a replay runs no engine
}

bool MainWindow::show_quant_block(const QString& type) {
  show_panel(PanelId::kQuantisation);
  auto* panel = qobject_cast<widgets::QuantisationPanel*>(panels_->panel(PanelId::kQuantisation));
  return panel != nullptr && panel->show_block(type);
}

void MainWindow::cancel_quantisation() { quant_lab_->cancel(); }

void MainWindow::connect_engine() {
  connect(engine_, &EngineClient::engine_ready, this, &MainWindow::on_engine_ready);
  connect(engine_, &EngineClient::load_failed, this, &MainWindow::on_load_failed);
  connect(engine_, &EngineClient::failed, this, &MainWindow::on_failed);
  connect(engine_, &EngineClient::notice, this,
          [this](const QString& text) { show_message(text, false); });
  // The typed prompt's prefill is the user's request too: it is coloured as theirs.
  connect(engine_, &EngineClient::prompt_prefill_started, this,
          [this](qint64 request) { folder_.mark_own_request(request); });
  connect(engine_, &EngineClient::generation_started, this, [this](qint64 request, int) {
    folder_.mark_own_request(request);
    update_actions();
  });
  connect(engine_, &EngineClient::sample_started, this,
          [this](qint64 request) { folder_.mark_own_request(request); });
  connect(engine_, &EngineClient::generation_refused, this, [this](const QString& message) {
    update_actions();
    on_failed(message);
  });
  connect(engine_, &EngineClient::generation_finished, this, [this](GenerationEnd end) {
    // The request's record was queued before this signal: fold it now, so whoever waits for
    // the generation reads its measures without waiting for a frame (or a busy GUI thread).
    on_frame();
    update_actions();
    statusBar()->showMessage(tr("Generation finished: %1").arg(finish_sentence(end)), 6000);
    Q_EMIT generation_finished(end);
  });
  connect(engine_, &EngineClient::running_changed, this, &MainWindow::update_actions);
  connect(engine_, &EngineClient::weight_progress, this,
          [this](int done, int total, const QString& type) {
            statusBar()->showMessage(
                tr("Quantising the weights to %1: tensor %2 of %3 (the current model keeps "
                   "serving)")
                    .arg(type.toUpper())
                    .arg(done)
                    .arg(total),
                done < total ? 0 : 3000);
            if (!work_->running(WorkProgress::Task::kWeights)) {
              work_->start(WorkProgress::Task::kWeights,
                           tr("Quantising the weights to %1").arg(type.toUpper()));
            }
            work_->advance(
                WorkProgress::Task::kWeights,
                total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 0.0);
          });
  connect(engine_, &EngineClient::timing_model_progress, this, &MainWindow::show_timing_progress);
  connect(engine_, &EngineClient::load_stage, this,
          [this](const QString& stage) { work_->set_stage(WorkProgress::Task::kLoad, stage); });
  connect(engine_, &EngineClient::batch_sweep_point, this, [this](const BatchSweepPoint& point) {
    work_->advance(WorkProgress::Task::kBatchSweep,
                   static_cast<double>(batch_sweep().size()) / kBatchSweepSizes);
    statusBar()->showMessage(
        tr("Sweeping batch sizes: max batch %1 measured, %2 tokens/s (%3 stops)...")
            .arg(point.max_batch)
            .arg(point.tokens_per_s(), 0, 'f', 0)
            .arg(stop_keys()));
  });
  connect(engine_, &EngineClient::batch_sweep_ready, this,
          [this](const QVector<BatchSweepPoint>& points) {
            const bool complete = points.size() == kBatchSweepSizes;
            work_->finish(WorkProgress::Task::kBatchSweep);
            update_actions();
            statusBar()->showMessage(complete ? tr("Batch sweep done")
                                              : tr("Batch sweep stopped after %1 of %2 batch sizes")
                                                    .arg(points.size())
                                                    .arg(kBatchSweepSizes),
                                     4000);
            Q_EMIT batch_sweep_finished();
          });
  connect_staggered_load();
  connect(engine_, &EngineClient::batching_changed, this, [this](const BatchingChoice& batching) {
    update_status();
    Q_EMIT batching_changed(batching);
  });
  connect(engine_, &EngineClient::batch_collecting, this, [this](const BatchCollecting& state) {
    collecting_at_ms_ = static_cast<double>(clock_.nsecsElapsed()) / 1e6;
    update_status();
    Q_EMIT batch_collecting_changed(state);
  });
  connect(engine_, &EngineClient::idle, this, [this](const EngineCounters& counters) {
    on_frame();  // fold what the engine reported before saying it is idle
    Q_EMIT engine_idle(counters);
  });
}

void MainWindow::show_timing_progress(quint64 written, quint64 total, const QString& path) {
  const QString name = QFileInfo(path).fileName();
  if (total > 0 && written >= total) {
    statusBar()->showMessage(tr("Timing model %1 written; loading it").arg(name), 4000);
    work_->finish(WorkProgress::Task::kTimingModel);
    work_->start(WorkProgress::Task::kLoad, loading_what(path));
    return;
  }
  if (total > 0) {
    work_->advance(WorkProgress::Task::kTimingModel,
                   static_cast<double>(written) / static_cast<double>(total));
  }
  statusBar()->showMessage(
      total > 0 ? tr("Writing the timing model %1 (random weights): %2 of %3 (the current model "
                     "keeps serving)")
                      .arg(name, format_bytes(written), format_bytes(total))
                : tr("Writing the timing model %1 (random weights)... (the current model keeps "
                     "serving)")
                      .arg(name));
}

}  // namespace servescope::gui
