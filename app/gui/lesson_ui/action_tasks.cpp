// The lesson actions' tasks: what each action does to the window and the measures it waits
// for. Running them in order, waiting and failing is action_dispatcher.cpp's job.
#include <QTimer>
#include <algorithm>
#include <stdexcept>
#include <string_view>

#include "app/cli/commands.h"
#include "app/gui/lesson_ui/action_arguments.h"
#include "app/gui/lesson_ui/action_dispatcher.h"
#include "app/gui/lesson_ui/pinned_figures.h"
#include "app/gui/window/main_window.h"
#include "app/gui/window/window_text.h"
#include "app/lessons/vocabulary.h"
#include "engine/telemetry/records.h"
#include "widgets/panel_view.h"

namespace servescope::gui {

using namespace action_arguments;

// Defined here, where every task that waits for a window signal is: the template needs
// MainWindow's signals, which the dispatcher's header does not include.
template <typename Signal>
void ActionDispatcher::wait_for(Signal signal, std::function<bool()> when) {
  waits_.push_back(connect(&window_, signal, this, [this, when] {
    if (when()) complete();
  }));
}

void ActionDispatcher::keep(const std::string& name) {
  std::map<std::string, double>& measures = kept_[name];
  measures.clear();
  for (const lessons::MeasureSpec& spec : lessons::measure_specs()) {
    const MeasureValue v = measure(spec.name);
    if (v.value) measures[std::string(spec.name)] = *v.value;
  }
}

const TimingModel* ActionDispatcher::timing_model(const QString& label) const {
  for (const TimingModel& m : timing_models_) {
    if (m.label == label) return &m;
  }
  return nullptr;
}

ActionDispatcher::Task ActionDispatcher::load_model(const QString& which) {
  QString path;
  const TimingModel* timing = nullptr;
  if (which == "bundled") {
    path = QString::fromStdString(cli::default_model_path());
  } else if (which.startsWith("timing:") && (timing = timing_model(which.mid(7)))) {
    path = timing_model_path(window_.timing_folder(), *timing);
  } else {
    throw BadArgument(tr("load_model: is bundled or timing:SIZE (a timing model's size), not %1")
                          .arg(which)
                          .toStdString());
  }
  const TimingModel model = timing ? *timing : TimingModel{};
  return Task{
      timing ? tr("Loading %1 timing model").arg(which.mid(7)) : tr("Loading the bundled model"),
      [this, path, model, is_timing = timing != nullptr] {
        const auto& info = window_.engine_info();
        if (info && info->model_path == path) return complete();
        wait_for(&MainWindow::engine_ready, [this, path] {
          return window_.engine_info() && window_.engine_info()->model_path == path;
        });
        fail_on_window_failure();
        if (is_timing) {
          window_.open_timing_model(model);
        } else {
          window_.open_model(path);
        }
      }};
}

ActionDispatcher::Task ActionDispatcher::set_backend(const QString& which) {
  return Task{
      tr("Backend %1").arg(which), [this, which] {
        const auto& info = window_.engine_info();
        if (info && info->backend == which) return complete();
        waits_.push_back(connect(&window_, &MainWindow::engine_ready, this, [this, which] {
          if (window_.engine_info()->backend != which) {
            Q_EMIT notice(tr("The %1 backend could not start here; the engine runs "
                             "on %2.")
                              .arg(which, window_.engine_info()->backend));
          }
          complete();
        }));
        fail_on_window_failure();
        window_.set_backend(BackendChoice(which == "vulkan" ? compute::BackendKind::kVulkan
                                                            : compute::BackendKind::kCpu));
      }};
}

ActionDispatcher::Task ActionDispatcher::set_kv_type(const QString& which) {
  const gguf::GgmlType type = *parse_kv_type(which);
  return Task{tr("KV cache in %1").arg(which.toUpper()), [this, type] {
                const auto& info = window_.engine_info();
                if (!info) return fail(tr("No model is loaded yet."));
                if (info->kv_type == type) return complete();
                wait_for(&MainWindow::engine_ready,
                         [this, type] { return window_.engine_info()->kv_type == type; });
                fail_on_window_failure();
                window_.set_kv_type(type);
              }};
}

ActionDispatcher::Task ActionDispatcher::set_keep_kv(bool keep) {
  return Task{keep ? tr("KV cache on") : tr("KV cache off"), [this, keep] {
                const auto& info = window_.engine_info();
                if (!info) return fail(tr("No model is loaded yet."));
                if (info->keep_kv == keep) return complete();
                wait_for(&MainWindow::engine_ready,
                         [this, keep] { return window_.engine_info()->keep_kv == keep; });
                fail_on_window_failure();
                window_.set_keep_kv(keep);
              }};
}

ActionDispatcher::Task ActionDispatcher::set_batching(std::optional<bool> static_batches,
                                                      std::optional<int> wait_ms) {
  const QString what = static_batches
                           ? (*static_batches ? tr("Static batching") : tr("Continuous batching"))
                           : tr("Batch wait %1 ms").arg(*wait_ms);
  return Task{what, [this, static_batches, wait_ms] {
                if (!window_.engine_info()) return fail(tr("No model is loaded yet."));
                BatchingChoice wanted = window_.batching();
                if (static_batches) wanted.static_batches = *static_batches;
                if (wait_ms) wanted.wait_ms = *wait_ms;
                const auto holds = [this, wanted] {
                  const BatchingChoice& b = window_.engine_batching();
                  return b.static_batches == wanted.static_batches && b.wait_ms == wanted.wait_ms;
                };
                if (holds()) {
                  window_.set_batching(wanted);  // the controls show it too
                  return complete();
                }
                // Done when the engine reports the policy it now holds.
                wait_for(&MainWindow::batching_changed, holds);
                fail_on_window_failure();
                window_.set_batching(wanted);
              }};
}

ActionDispatcher::Task ActionDispatcher::set_activations(bool quantised) {
  return Task{quantised ? tr("8-bit activations") : tr("Exact float activations"),
              [this, quantised] {
                const auto& info = window_.engine_info();
                if (!info) return fail(tr("No model is loaded yet."));
                if (info->backend != "cpu") {
                  return fail(
                      tr("Only the CPU backend quantises activations; add set_backend: cpu "
                         "before set_activations."));
                }
                if (info->quantised_activations == quantised) return complete();
                wait_for(&MainWindow::engine_ready, [this, quantised] {
                  return window_.engine_info()->quantised_activations == quantised;
                });
                fail_on_window_failure();
                window_.set_quantised_activations(quantised);
              }};
}

ActionDispatcher::Task ActionDispatcher::generate(std::optional<int> max_tokens) {
  return Task{tr("Generating"), [this, max_tokens] {
                if (!window_.engine_info()) return fail(tr("No model is loaded yet."));
                // Finished and folded: the user's request has left the engine and its record
                // has reached the folder (classmates may go on serving; they are not waited for).
                auto finished = std::make_shared<bool>(false);
                waits_.push_back(connect(&window_, &MainWindow::generation_finished, this,
                                         [this, finished](GenerationEnd end) {
                                           if (ran_to_its_end(end)) {
                                             *finished = true;
                                             if (poll_condition_()) complete();  // folded
                                           } else {
                                             fail(tr("The generation ended early (%1), so "
                                                     "there is nothing to measure.")
                                                      .arg(finish_sentence(end)));
                                           }
                                         }));
                wait_polling([this, finished] {
                  if (!*finished) return false;
                  for (const telemetry::RequestRecord& r : window_.folder().requests()) {
                    if (r.request_id == window_.user_request()) return true;
                  }
                  return false;
                });
                fail_on_window_failure();
                if (window_.speed() == Speed::kSingleStep) window_.set_speed(Speed::kRealTime);
                if (window_.generating()) return;  // a paused generation runs to its end
                if (max_tokens) window_.set_max_tokens(*max_tokens);
                started_generation_ = true;
                window_.generate();
              }};
}

ActionDispatcher::Task ActionDispatcher::decode_steps(int steps) {
  return Task{tr("%1 single decode steps").arg(steps), [this, steps] {
                if (!window_.engine_info()) return fail(tr("No model is loaded yet."));
                window_.set_speed(Speed::kSingleStep);
                const bool fresh = !window_.generating();
                if (fresh) {
                  started_generation_ = true;
                  window_.generate();
                }
                // The user's tokens so far; each wanted step adds one (a fresh generation's
                // prefill brings the first).
                auto user_tokens = [this]() -> int64_t {
                  const TelemetryFolder& f = window_.folder();
                  if (window_.user_request() < 0 || f.watched_request() != window_.user_request()) {
                    return 0;
                  }
                  return static_cast<int64_t>(f.watched_tokens().size());
                };
                const int64_t target = (fresh ? 1 : user_tokens()) + steps;
                auto pending_step = std::make_shared<int64_t>(-1);  // steps count when asked
                fail_on_window_failure();
                wait_polling([this, user_tokens, target, pending_step] {
                  if (user_tokens() >= target) return true;
                  if (!window_.generating()) return true;        // the generation ended first
                  if (window_.user_request() < 0) return false;  // not submitted yet
                  const int64_t steps_now = window_.folder().counts().steps;
                  if (*pending_step < 0 || steps_now > *pending_step) {
                    *pending_step = steps_now;
                    window_.step();
                  }
                  return false;
                });
              }};
}

ActionDispatcher::Task ActionDispatcher::batch_sweep() {
  return Task{tr("Sweeping batch sizes 1 to 16"), [this] {
                if (!window_.engine_info()) return fail(tr("No model is loaded yet."));
                // The window shows the Batching panel while it sweeps; the lesson goes back to
                // the panel it was pointing at (the sweep's results stay in Batching).
                const PanelId shown = window_.current_panel();
                wait_for(&MainWindow::batch_sweep_finished, [this, shown] {
                  window_.show_panel(shown);
                  return true;
                });
                fail_on_window_failure();
                if (!window_.sweeping()) {
                  started_sweep_ = true;
                  window_.sweep_batch_sizes();
                }
              }};
}

ActionDispatcher::Task ActionDispatcher::staggered_load(const StaggeredLoad& load) {
  return Task{tr("Running %1 requests arriving at %2 per second, %3")
                  .arg(load.clients)
                  .arg(load.rate_per_s)
                  .arg(batching_text(load.batching)),
              [this, load] {
                if (!window_.engine_info()) return fail(tr("No model is loaded yet."));
                if (window_.sweeping()) {
                  return fail(tr("A batch sweep is running; wait for it to finish or stop it."));
                }
                wait_for(&MainWindow::staggered_load_finished, [] { return true; });
                fail_on_window_failure();
                started_sweep_ = true;  // cancel() stops it as it stops a sweep
                window_.run_staggered_load(load);
              }};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::size_sweep(const QStringList& sizes) {
  std::vector<Task> tasks;
  // Forget the last sweep, remember what to return to.
  struct Restore {
    QString model;
    int classmates = 0;
    int max_tokens = 0;
  };
  auto restore = std::make_shared<Restore>();
  tasks.push_back(Task{tr("Preparing the size sweep"), [this, restore] {
                         size_sweep_.clear();
                         restore->model =
                             window_.engine_info() ? window_.engine_info()->model_path : QString();
                         restore->classmates = window_.classmates();
                         restore->max_tokens = window_.max_tokens();
                         window_.set_classmates(0);
                         window_.set_greedy(true);
                         complete();
                       }});
  for (const QString& size : sizes) {
    tasks.push_back(load_model("timing:" + size));
    tasks.push_back(generate(kSizeSweepTokens));
    tasks.push_back(Task{tr("Measuring %1").arg(size), [this, size] {
                           const MeasureValue ms = measure("decode_ms_per_token");
                           if (!ms.value)
                             return fail(tr("Size sweep, %1: %2").arg(size, ms.missing));
                           const std::optional<DecodeStepMeans> step =
                               mean_decode_step(window_.folder().steps());
                           if (!step) return fail(tr("Size sweep, %1: no decode step").arg(size));
                           size_sweep_.push_back({size, window_.engine_info()->weight_bytes,
                                                  *ms.value, step->flops_per_token});
                           complete();
                         }});
  }
  tasks.push_back(Task{tr("Back to the model in use"), [this, restore] {
                         window_.set_classmates(restore->classmates);
                         window_.set_max_tokens(restore->max_tokens);
                         const QString path = restore->model;
                         const auto& info = window_.engine_info();
                         if (path.isEmpty() || (info && info->model_path == path))
                           return complete();
                         wait_for(&MainWindow::engine_ready, [this, path] {
                           return window_.engine_info()->model_path == path;
                         });
                         fail_on_window_failure();
                         window_.open_model(path);
                       }});
  return tasks;
}

ActionDispatcher::Task ActionDispatcher::quant_compare(const QStringList& types) {
  return Task{
      tr("Comparing %1 with F32").arg(types.join(", ")), [this, types] {
        if (!window_.engine_info()) return fail(tr("No model is loaded yet."));
        if (window_.engine_info()->random_weights) {
          return fail(
              tr("A random-weight model's variants compare noise; load_model: "
                 "bundled first."));
        }
        const int64_t before = window_.quant_lab() ? window_.quant_lab()->serial : 0;
        // Ours first: the panel, shown after, then has no first comparison of its own
        // to start.
        window_.compare_quantisation(types);
        window_.show_panel(PanelId::kQuantisation);
        wait_polling([this, before] {
          const std::optional<QuantLabReport>& lab = window_.quant_lab();
          if (!lab || !lab->complete || lab->serial <= before) return false;
          if (!lab->report.baseline.type.empty()) return true;
          fail(tr("The comparison measured nothing: %1")
                   .arg(lab->problems.empty() ? tr("no reason given")
                                              : QString::fromStdString(lab->problems.front())));
          return false;
        });
      }};
}

ActionDispatcher::Task ActionDispatcher::highlight(const QString& panel, const QString& element) {
  return Task{tr("Pointing at %1").arg(element), [this, panel, element] {
                const PanelId id = *parse_panel_key(panel.toStdString());
                window_.show_panel(id);
                window_.panels().panel(id)->set_highlight(element);
                complete();
              }};
}

}  // namespace servescope::gui
