#include "app/gui/lesson_ui/action_dispatcher.h"

#include <QTimer>
#include <algorithm>
#include <stdexcept>
#include <string_view>

#include "app/cli/commands.h"
#include "app/gui/window/main_window.h"
#include "app/gui/lesson_ui/action_arguments.h"
#include "app/gui/lesson_ui/pinned_figures.h"
#include "app/gui/window/window_text.h"
#include "app/lessons/vocabulary.h"
#include "engine/telemetry/records.h"
#include "widgets/panel_view.h"

namespace servescope::gui {

using namespace action_arguments;

namespace {

constexpr int kPollMs = 16;

QVariant argument_value(lessons::ArgKind kind, const lessons::ArgValue& v) {
  switch (kind) {
    case lessons::ArgKind::kInteger:
      return QVariant::fromValue(static_cast<int>(v.integer));
    case lessons::ArgKind::kBool:
      return QVariant(v.flag);
    case lessons::ArgKind::kChoiceList: {
      QStringList items;
      for (const std::string& item : v.items) items.push_back(QString::fromStdString(item));
      return items;
    }
    case lessons::ArgKind::kChoice:
    case lessons::ArgKind::kText:
    case lessons::ArgKind::kFields:
      break;
  }
  return QString::fromStdString(v.text);
}

}  // namespace

LessonAction to_lesson_action(const lessons::Action& action) {
  LessonAction out{QString::fromStdString(action.name), {}};
  const lessons::ActionSpec* spec = lessons::find_action(action.name);
  if (!spec) return out;  // run() refuses the unknown name with its own message
  if (spec->kind != lessons::ArgKind::kFields) {
    out.argument = argument_value(spec->kind, action.value);
    return out;
  }
  QVariantMap fields;
  for (const auto& [name, value] : action.fields) {
    const lessons::FieldSpec* field = lessons::find_field(*spec, name);
    fields.insert(QString::fromStdString(name),
                  argument_value(field ? field->kind : lessons::ArgKind::kText, value));
  }
  out.argument = fields;
  return out;
}

std::vector<LessonAction> to_lesson_actions(const std::vector<lessons::Action>& actions) {
  std::vector<LessonAction> out;
  for (const lessons::Action& a : actions) out.push_back(to_lesson_action(a));
  return out;
}

ActionDispatcher::ActionDispatcher(MainWindow& window, QObject* parent)
    : QObject(parent), window_(window), poll_timer_(new QTimer(this)) {
  for (const TimingModel& m : window.timing_models()) {
    if (m.type == "f32") timing_models_.push_back(m);
  }
  poll_timer_->setInterval(kPollMs);
  connect(poll_timer_, &QTimer::timeout, this, [this] {
    // A copy: a condition may fail() the run, which clears poll_condition_ while it runs.
    const std::function<bool()> when = poll_condition_;
    if (when && when()) complete();
  });
}

ActionDispatcher::~ActionDispatcher() { end_waiting(); }


MeasureValue ActionDispatcher::measure(std::string_view name) const {
  return read_measure(
      measure_inputs(window_, size_sweep_, run_start_counts_ ? &*run_start_counts_ : nullptr,
                     variant_),
      name);
}

// --- running ------------------------------------------------------------------------------

void ActionDispatcher::run(const std::vector<LessonAction>& actions) {
  if (busy_) {
    Q_EMIT failed(tr("An experiment is already running; wait for it or cancel it."));
    return;
  }
  if (window_.replay_player() != nullptr) {
    Q_EMIT failed(
        tr("This window replays a recorded run: an experiment needs a live engine. Start "
           "ServeScope without --replay to run it."));
    return;
  }
  std::deque<Task> tasks;
  try {
    for (const LessonAction& a : actions) {
      for (Task& t : tasks_for(a)) tasks.push_back(std::move(t));
    }
  } catch (const BadArgument& error) {
    Q_EMIT failed(QString::fromUtf8(error.what()));
    return;
  }
  tasks_ = std::move(tasks);
  // An earlier step's highlight would cover this experiment's data until its own is set.
  clear_highlights();
  run_start_counts_ = window_.folder().counts();
  kept_.clear();
  total_ = static_cast<int>(tasks_.size());
  done_ = 0;
  busy_ = true;
  started_generation_ = false;
  started_sweep_ = false;
  Q_EMIT started();
  QTimer::singleShot(0, this, &ActionDispatcher::next);
}

QString ActionDispatcher::check(const LessonAction& action) {
  try {
    tasks_for(action);
  } catch (const BadArgument& error) {
    return QString::fromUtf8(error.what());
  }
  return {};
}

void ActionDispatcher::clear_highlights() {
  for (const PanelId id : kAllPanels) window_.panels().panel(id)->set_highlight(QString());
}

void ActionDispatcher::cancel() {
  if (!busy_) return;
  end_waiting();
  tasks_.clear();
  end_run();
  if (started_generation_ && window_.generating()) window_.stop();
  if (started_sweep_ && window_.sweeping()) window_.stop_batch_sweep();
  Q_EMIT cancelled();
}

void ActionDispatcher::next() {
  if (!busy_) return;
  if (tasks_.empty()) {
    end_run();
    Q_EMIT progress(total_, total_, tr("Done"));
    Q_EMIT finished();
    return;
  }
  Task task = std::move(tasks_.front());
  tasks_.pop_front();
  Q_EMIT progress(done_, total_, task.what);
  task.start();
}

void ActionDispatcher::complete() {
  if (!busy_) return;
  end_waiting();
  ++done_;
  QTimer::singleShot(0, this, &ActionDispatcher::next);  // never recurse into the next action
}

void ActionDispatcher::fail(const QString& reason) {
  if (!busy_) return;
  end_waiting();
  tasks_.clear();
  end_run();
  Q_EMIT failed(reason);
}

void ActionDispatcher::end_run() {
  busy_ = false;
  Q_EMIT ended();
}

void ActionDispatcher::end_waiting() {
  for (const QMetaObject::Connection& c : waits_) disconnect(c);
  waits_.clear();
  poll_timer_->stop();
  poll_condition_ = nullptr;
}

template <typename Signal>
void ActionDispatcher::wait_for(Signal signal, std::function<bool()> when) {
  waits_.push_back(connect(&window_, signal, this, [this, when] {
    if (when()) complete();
  }));
}

void ActionDispatcher::wait_polling(std::function<bool()> when) {
  poll_condition_ = std::move(when);
  poll_timer_->start();
}

void ActionDispatcher::fail_on_window_failure() {
  waits_.push_back(connect(&window_, &MainWindow::failed, this,
                           [this](const QString& message) { fail(message); }));
}

// --- the actions ---------------------------------------------------------------------------


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
                  const BatchingChoice& b = window_.engine_info()->batching;
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
    tasks.push_back(
        Task{tr("Measuring %1").arg(size), [this, size] {
               const MeasureValue ms = measure("decode_ms_per_token");
               if (!ms.value) return fail(tr("Size sweep, %1: %2").arg(size, ms.missing));
               const std::optional<DecodeStepMeans> step = mean_decode_step(window_.folder().steps());
               if (!step) return fail(tr("Size sweep, %1: no decode step").arg(size));
               size_sweep_.push_back({size, window_.engine_info()->weight_bytes, *ms.value,
                                      step->flops_per_token});
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
  return Task{tr("Comparing %1 with F32").arg(types.join(", ")), [this, types] {
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
                           .arg(lab->problems.empty()
                                    ? tr("no reason given")
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
