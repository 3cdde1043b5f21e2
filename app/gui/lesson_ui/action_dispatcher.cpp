// Running a lesson's actions in order: waiting for each to finish, failing with a reason,
// cancelling. What each action does is action_tasks.cpp's.
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
  if (window_.remote_mode()) {
    Q_EMIT failed(
        tr("This window is attached to a server: an experiment needs the local engine's "
           "insides. File > Disconnect from the server, then run it."));
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

void ActionDispatcher::wait_polling(std::function<bool()> when) {
  poll_condition_ = std::move(when);
  poll_timer_->start();
}

void ActionDispatcher::fail_on_window_failure() {
  waits_.push_back(connect(&window_, &MainWindow::failed, this,
                           [this](const QString& message) { fail(message); }));
}

}  // namespace servescope::gui
