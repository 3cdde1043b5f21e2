// The lesson actions the window runs, as one table from an action's name to the member that
// turns its argument into tasks: a name not in the table is not an action ServeScope knows,
// and the table is the list implemented_actions() gives the lesson validator.
#include <QStringList>
#include <algorithm>
#include <map>

#include "app/gui/lesson_ui/action_arguments.h"
#include "app/gui/lesson_ui/action_dispatcher.h"
#include "app/gui/lesson_ui/pinned_figures.h"
#include "app/gui/window/main_window.h"

namespace servescope::gui {

using namespace action_arguments;

const std::map<std::string_view, ActionDispatcher::TaskMaker>& ActionDispatcher::task_makers() {
  static const std::map<std::string_view, TaskMaker> makers = {
      {"load_model", &ActionDispatcher::tasks_load_model},
      {"set_backend", &ActionDispatcher::tasks_set_backend},
      {"set_kv_type", &ActionDispatcher::tasks_set_kv_type},
      {"set_kv_cache", &ActionDispatcher::tasks_set_kv_cache},
      {"pin", &ActionDispatcher::tasks_pin},
      {"set_classmates", &ActionDispatcher::tasks_set_classmates},
      {"set_batching", &ActionDispatcher::tasks_set_batching},
      {"set_batch_wait", &ActionDispatcher::tasks_set_batch_wait},
      {"set_activations", &ActionDispatcher::tasks_set_activations},
      {"set_greedy", &ActionDispatcher::tasks_set_greedy},
      {"set_prompt", &ActionDispatcher::tasks_set_prompt},
      {"set_max_tokens", &ActionDispatcher::tasks_set_max_tokens},
      {"generate", &ActionDispatcher::tasks_generate},
      {"decode_steps", &ActionDispatcher::tasks_decode_steps},
      {"forget_cached_prefixes", &ActionDispatcher::tasks_forget_cached_prefixes},
      {"batch_sweep", &ActionDispatcher::tasks_batch_sweep},
      {"staggered_load", &ActionDispatcher::tasks_staggered_load},
      {"size_sweep", &ActionDispatcher::tasks_size_sweep},
      {"quant_compare", &ActionDispatcher::tasks_quant_compare},
      {"select_variant", &ActionDispatcher::tasks_select_variant},
      {"keep", &ActionDispatcher::tasks_keep},
      {"open_panel", &ActionDispatcher::tasks_open_panel},
      {"highlight", &ActionDispatcher::tasks_highlight},
  };
  return makers;
}

const std::vector<std::string_view>& ActionDispatcher::implemented_actions() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> all;
    for (const auto& [name, maker] : task_makers()) all.push_back(name);
    return all;
  }();
  return names;
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_for(const LessonAction& a) {
  const auto maker = task_makers().find(a.name.toStdString());
  if (maker == task_makers().end()) bad(a, "is not an action ServeScope knows");
  return (this->*maker->second)(a);
}

ActionDispatcher::Task ActionDispatcher::now(QString what, std::function<void()> act) {
  return Task{std::move(what), [this, act = std::move(act)] {
                act();
                complete();
              }};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_load_model(const LessonAction& a) {
  return {load_model(text_argument(a))};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_set_backend(const LessonAction& a) {
  const QString which = text_argument(a);
  if (which != "cpu" && which != "vulkan") bad(a, "is cpu or vulkan, not " + which);
  return {set_backend(which)};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_set_kv_type(const LessonAction& a) {
  const QString which = text_argument(a);
  if (!parse_kv_type(which)) bad(a, "is f32, f16 or q8_0, not " + which);
  return {set_kv_type(which)};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_set_kv_cache(const LessonAction& a) {
  const QString which = text_argument(a);
  if (which != "on" && which != "off") bad(a, "is on or off, not " + which);
  return {set_keep_kv(which == "on")};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_pin(const LessonAction& a) {
  const QString which = text_argument(a);
  if (which != "on" && which != "off") bad(a, "is on or off, not " + which);
  PinnedFigures& pinned = window_.pinned_figures();
  if (which == "off") {
    return {now(tr("Unpinning"), [&pinned] { pinned.unpin(); })};
  }
  return {Task{tr("Pinning the last run's figures"), [this, &pinned] {
                 if (pinned.pin()) return complete();
                 fail(tr("pin: there is no run to pin yet; generate first"));
               }}};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_set_classmates(const LessonAction& a) {
  const int count = int_argument(a);
  return {now(tr("%1 classmates").arg(count), [this, count] { window_.set_classmates(count); })};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_set_batching(const LessonAction& a) {
  const QString which = text_argument(a);
  if (which != "continuous" && which != "static") {
    bad(a, "is continuous or static, not " + which);
  }
  return {set_batching(which == "static", std::nullopt)};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_set_batch_wait(const LessonAction& a) {
  return {set_batching(std::nullopt, int_argument(a))};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_set_activations(const LessonAction& a) {
  const QString which = text_argument(a);
  if (which != "f32" && which != "q8_0") bad(a, "is f32 or q8_0, not " + which);
  return {set_activations(which == "q8_0")};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_set_greedy(const LessonAction& a) {
  const bool greedy = bool_argument(a);
  return {now(greedy ? tr("Greedy decoding") : tr("Sampling"),
              [this, greedy] { window_.set_greedy(greedy); })};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_set_prompt(const LessonAction& a) {
  const QString text = a.argument.toString();
  return {now(tr("Typing the prompt"), [this, text] { window_.set_prompt(text); })};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_set_max_tokens(const LessonAction& a) {
  const int count = int_argument(a);
  return {
      now(tr("At most %1 tokens").arg(count), [this, count] { window_.set_max_tokens(count); })};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_generate(const LessonAction& a) {
  const QVariantMap m = map_argument(a);
  std::optional<int> max_tokens;
  if (m.contains("max_tokens")) {
    max_tokens = int_field(a, m.value("max_tokens"), "max_tokens");
  }
  return {generate(max_tokens)};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_decode_steps(const LessonAction& a) {
  return {decode_steps(int_argument(a))};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_forget_cached_prefixes(
    const LessonAction&) {
  return {now(tr("Forgetting cached prompts"), [this] { window_.forget_cached_prefixes(); })};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_batch_sweep(const LessonAction&) {
  return {batch_sweep()};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_staggered_load(const LessonAction& a) {
  return {staggered_load(staggered_load_argument(a))};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_size_sweep(const LessonAction& a) {
  const QVariantMap m = map_argument(a);
  QStringList sizes = m.value("sizes").toStringList();
  if (sizes.isEmpty()) {
    for (const TimingModel& t : timing_models_) sizes.push_back(t.label);
  }
  for (const QString& s : sizes) {
    if (!timing_model(s)) bad(a, "has no timing model " + s);
  }
  return size_sweep(sizes);
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_quant_compare(const LessonAction& a) {
  const QStringList types = a.argument.toStringList();
  const lessons::ActionSpec& spec = spec_of(a);
  if (types.isEmpty()) bad(a, "needs a list of weight types, such as [q8_0, q4_0]");
  for (const QString& type : types) {
    if (std::find(spec.allowed.begin(), spec.allowed.end(), type.toStdString()) ==
        spec.allowed.end()) {
      bad(a, QString("has no weight type %1; it compares %2")
                 .arg(type, QString::fromStdString(lessons::one_of(spec.allowed))));
    }
  }
  return {quant_compare(types)};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_select_variant(const LessonAction& a) {
  const QString row = text_argument(a);
  const lessons::ActionSpec& spec = spec_of(a);
  if (std::find(spec.allowed.begin(), spec.allowed.end(), row.toStdString()) ==
      spec.allowed.end()) {
    bad(a,
        QString("is %1, not %2").arg(QString::fromStdString(lessons::one_of(spec.allowed)), row));
  }
  return {now(tr("Reading the %1 row").arg(row), [this, row] { variant_ = row.toStdString(); })};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_keep(const LessonAction& a) {
  const std::string name = text_argument(a).toStdString();
  return {now(tr("Keeping the measures"), [this, name] { keep(name); })};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_open_panel(const LessonAction& a) {
  const QString key = text_argument(a);
  const std::optional<PanelId> panel = parse_panel_key(key.toStdString());
  if (!panel)
    bad(a, "has no panel " + key + "; panels: " + QString::fromStdString(panel_keys(", ")));
  return {now(tr("Opening the panel"), [this, p = *panel] { window_.show_panel(p); })};
}

std::vector<ActionDispatcher::Task> ActionDispatcher::tasks_highlight(const LessonAction& a) {
  const QVariantMap m = map_argument(a);
  const QString key = m.value("panel").toString();
  const std::optional<PanelId> panel = parse_panel_key(key.toStdString());
  if (!panel) bad(a, "has no panel " + key);
  const QString element = m.value("element").toString();
  const QStringList known = window_.panels().panel(*panel)->highlight_elements();
  if (!known.contains(element)) {
    bad(a,
        QString("the %1 panel has no element %2; it has: %3").arg(key, element, known.join(", ")));
  }
  return {highlight(key, element)};
}

}  // namespace servescope::gui
