#include "app/gui/lesson_ui/lesson_settings.h"

#include <QFileInfo>
#include <functional>
#include <span>

#include "app/gui/window/main_window.h"
#include "engine/gguf/ggml_types.h"

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

// The model file and the backend it runs on, given back in one reload: the backend alone
// would reload the lesson's model. No value before a model was loaded (nothing to give back).
QVariant engine_of(const MainWindow& w) {
  if (w.model_path().isEmpty()) return {};
  const BackendChoice& b = w.backend_choice();
  return QVariantList{w.model_path(), static_cast<int>(b.kind), device_index(b),
                      b.quantised_activations};
}

BackendChoice backend_in(const QVariantList& engine) {
  return backend_choice_of(static_cast<compute::BackendKind>(engine.at(1).toInt()),
                           engine.at(2).toInt(), engine.at(3).toBool());
}

QString describe_engine(const QVariant& v) {
  const QVariantList engine = v.toList();
  const BackendChoice b = backend_in(engine);
  return LessonSettings::tr("%1 on the %2 backend%3")
      .arg(QFileInfo(engine.at(0).toString()).fileName(),
           b.kind == compute::BackendKind::kVulkan ? LessonSettings::tr("Vulkan")
                                                   : LessonSettings::tr("CPU"),
           b.quantised_activations ? LessonSettings::tr(" with 8-bit activations") : QString());
}

std::span<const Setting> settings() {
  // In the order they are given back: the engine's reload first, then what it keeps across one.
  static const Setting kSettings[] = {
      {"engine", engine_of,
       [](MainWindow& w, const QVariant& v) {
         w.open_model_on(v.toList().at(0).toString(), backend_in(v.toList()));
       },
       describe_engine},
      {"kv type", [](const MainWindow& w) { return QVariant(static_cast<int>(w.kv_type())); },
       [](MainWindow& w, const QVariant& v) {
         w.set_kv_type(static_cast<gguf::GgmlType>(v.toInt()));
       },
       [](const QVariant& v) {
         const std::string_view name = gguf::type_name(static_cast<gguf::GgmlType>(v.toInt()));
         return LessonSettings::tr("KV cache in %1")
             .arg(QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size())));
       }},
      {"kv cache", [](const MainWindow& w) { return QVariant(w.keep_kv()); },
       [](MainWindow& w, const QVariant& v) { w.set_keep_kv(v.toBool()); },
       [](const QVariant& v) {
         return v.toBool() ? LessonSettings::tr("KV cache on") : LessonSettings::tr("KV cache off");
       }},
      {"classmates", [](const MainWindow& w) { return QVariant(w.classmates()); },
       [](MainWindow& w, const QVariant& v) { w.set_classmates(v.toInt()); },
       [](const QVariant& v) { return LessonSettings::tr("classmates %1").arg(v.toInt()); }},
      {"max tokens", [](const MainWindow& w) { return QVariant(w.max_tokens()); },
       [](MainWindow& w, const QVariant& v) { w.set_max_tokens(v.toInt()); },
       [](const QVariant& v) { return LessonSettings::tr("max tokens %1").arg(v.toInt()); }},
      {"samples", [](const MainWindow& w) { return QVariant(w.samples()); },
       [](MainWindow& w, const QVariant& v) { w.set_samples(v.toInt()); },
       [](const QVariant& v) { return LessonSettings::tr("samples %1").arg(v.toInt()); }},
      {"greedy", [](const MainWindow& w) { return QVariant(w.greedy()); },
       [](MainWindow& w, const QVariant& v) { w.set_greedy(v.toBool()); },
       [](const QVariant& v) {
         return v.toBool() ? LessonSettings::tr("greedy on") : LessonSettings::tr("greedy off");
       }},
      {"batching", [](const MainWindow& w) { return QVariant(w.batching().static_batches); },
       [](MainWindow& w, const QVariant& v) {
         set_batching_part(w, [&](BatchingChoice& b) { b.static_batches = v.toBool(); });
       },
       [](const QVariant& v) {
         return v.toBool() ? LessonSettings::tr("static batching")
                           : LessonSettings::tr("continuous batching");
       }},
      {"batch wait", [](const MainWindow& w) { return QVariant(w.batching().wait_ms); },
       [](MainWindow& w, const QVariant& v) {
         set_batching_part(w, [&](BatchingChoice& b) { b.wait_ms = v.toInt(); });
       },
       [](const QVariant& v) { return LessonSettings::tr("batch wait %1 ms").arg(v.toInt()); }},
      {"prompt", [](const MainWindow& w) { return QVariant(w.prompt()); },
       [](MainWindow& w, const QVariant& v) { w.set_prompt(v.toString()); },
       [](const QVariant&) { return LessonSettings::tr("your prompt"); }},
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
    // Changed by hand since the lesson set it: the learner's choice stays. Nothing to give
    // back to when it had no value before.
    if (s.get(window_) != change.set || change.before == change.set) continue;
    if (!change.before.isValid()) continue;
    s.set(window_, change.before);
    given.push_back(s.describe(change.before));
  }
  changed_.clear();
  at_run_start_.reset();
  return given;
}

}  // namespace servescope::gui
