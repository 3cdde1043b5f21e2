#include "app/gui/work_progress.h"

#include <algorithm>
#include <cmath>

#include <QFileInfo>

namespace servescope::gui {

QString loading_what(const QString& path) {
  return QString("Loading %1").arg(QFileInfo(path).fileName());
}

void WorkProgress::start(Task task, const QString& what) {
  Running& run = running_[task];
  run.what = what;
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
  const QString seconds = QString::number(static_cast<double>(run->clock.elapsed()) / 1000.0, 'f', 1);
  if (run->fraction < 0.0) return QString("%1 (%2 s)").arg(run->what, seconds);
  return QString("%1: %2 % (%3 s)")
      .arg(run->what)
      .arg(static_cast<int>(std::floor(run->fraction * 100.0)))
      .arg(seconds);
}

double WorkProgress::fraction() const {
  const Running* run = latest();
  return run == nullptr ? -1.0 : run->fraction;
}

}  // namespace servescope::gui
