#include "app/gui/window/work_progress.h"

#include <QFileInfo>
#include <QStringList>
#include <algorithm>
#include <cmath>

namespace servescope::gui {

QString loading_what(const QString& path) {
  return WorkProgress::tr("Loading %1").arg(QFileInfo(path).fileName());
}

void WorkProgress::start(Task task, const QString& what) {
  Running& run = running_[task];
  run.what = what;
  run.stage.clear();
  run.fraction = -1.0;
  run.clock.start();
  run.order = ++starts_;
  Q_EMIT changed();
}

void WorkProgress::advance(Task task, double fraction) {
  const auto it = running_.find(task);
  if (it == running_.end()) return;
  it->second.fraction = std::clamp(fraction, 0.0, 1.0);
  Q_EMIT changed();
}

void WorkProgress::set_stage(Task task, const QString& stage) {
  const auto it = running_.find(task);
  if (it == running_.end()) return;
  it->second.stage = stage;
  Q_EMIT changed();
}

void WorkProgress::finish(Task task) {
  if (running_.erase(task) > 0) Q_EMIT changed();
}

const WorkProgress::Running* WorkProgress::latest() const {
  const Running* last = nullptr;
  for (const auto& [task, run] : running_) {
    if (last == nullptr || run.order > last->order) last = &run;
  }
  return last;
}

QString WorkProgress::line() const {
  const Running* run = latest();
  if (run == nullptr) return {};
  QStringList parts{run->what};
  if (!run->stage.isEmpty()) parts << run->stage;
  if (run->fraction >= 0.0) {
    parts << QString("%1 %").arg(static_cast<int>(std::floor(run->fraction * 100.0)));
  }
  const double seconds = static_cast<double>(run->clock.elapsed()) / 1000.0;
  return tr("%1 (%2 s)").arg(parts.join(": ")).arg(seconds, 0, 'f', 1);
}

double WorkProgress::fraction() const {
  const Running* run = latest();
  return run == nullptr ? -1.0 : run->fraction;
}

}  // namespace servescope::gui
