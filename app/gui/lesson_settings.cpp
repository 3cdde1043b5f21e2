#include "app/gui/lesson_settings.h"

#include <functional>
#include <span>

#include "app/gui/main_window.h"

namespace servescope::gui {
namespace {

// One setting a lesson's actions change: how to read it, set it and name a value of it.
struct Setting {
  const char* name;
  std::function<QVariant(const MainWindow&)> get;
  std::function<void(MainWindow&, const QVariant&)> set;
  std::function<QString(const QVariant&)> describe;
};

void set_batching_part(MainWindow& window, const std::function<void(BatchingChoice&)>& part) {
  BatchingChoice batching = window.batching();
  part(batching);
  window.set_batching(batching);
}

std::span<const Setting> settings() {
  static const Setting kSettings[] = {
      {"classmates", [](const MainWindow& w) { return QVariant(w.classmates()); },
       [](MainWindow& w, const QVariant& v) { w.set_classmates(v.toInt()); },
       [](const QVariant& v) { return QString("classmates %1").arg(v.toInt()); }},
      {"max tokens", [](const MainWindow& w) { return QVariant(w.max_tokens()); },
       [](MainWindow& w, const QVariant& v) { w.set_max_tokens(v.toInt()); },
       [](const QVariant& v) { return QString("max tokens %1").arg(v.toInt()); }},
      {"greedy", [](const MainWindow& w) { return QVariant(w.greedy()); },
       [](MainWindow& w, const QVariant& v) { w.set_greedy(v.toBool()); },
       [](const QVariant& v) { return QString(v.toBool() ? "greedy on" : "greedy off"); }},
      {"batching", [](const MainWindow& w) { return QVariant(w.batching().static_batches); },
       [](MainWindow& w, const QVariant& v) {
         set_batching_part(w, [&](BatchingChoice& b) { b.static_batches = v.toBool(); });
       },
       [](const QVariant& v) {
         return QString(v.toBool() ? "static batching" : "continuous batching");
       }},
      {"batch wait", [](const MainWindow& w) { return QVariant(w.batching().wait_ms); },
       [](MainWindow& w, const QVariant& v) {
         set_batching_part(w, [&](BatchingChoice& b) { b.wait_ms = v.toInt(); });
       },
       [](const QVariant& v) { return QString("batch wait %1 ms").arg(v.toInt()); }},
      {"prompt", [](const MainWindow& w) { return QVariant(w.prompt()); },
       [](MainWindow& w, const QVariant& v) { w.set_prompt(v.toString()); },
       [](const QVariant&) { return QString("your prompt"); }},
  };
  return kSettings;
}

std::map<QString, QVariant> read_all(const MainWindow& window) {
  std::map<QString, QVariant> values;
  for (const Setting& s : settings()) values[s.name] = s.get(window);
  return values;
}

}  // namespace

void LessonSettings::run_started() { at_run_start_ = read_all(window_); }

void LessonSettings::run_ended() {
  if (!at_run_start_) return;
  for (const auto& [name, now] : read_all(window_)) {
    const QVariant& before_run = at_run_start_->at(name);
    if (now == before_run) continue;
    // The first change keeps what the learner had; later ones only move what the lesson left.
    const auto [it, first] = changed_.try_emplace(name, Change{before_run, now});
    if (!first) it->second.set = now;
  }
  at_run_start_.reset();
}

QStringList LessonSettings::give_back() {
  QStringList given;
  for (const Setting& s : settings()) {
    const auto it = changed_.find(s.name);
    if (it == changed_.end()) continue;
    const Change& change = it->second;
    // Changed by hand since the lesson set it: the learner's choice stays.
    if (s.get(window_) != change.set || change.before == change.set) continue;
    s.set(window_, change.before);
    given.push_back(s.describe(change.before));
  }
  changed_.clear();
  at_run_start_.reset();
  return given;
}

}  // namespace servescope::gui
