#include "app/gui/lesson_ui/action_arguments.h"

#include <algorithm>

namespace servescope::gui::action_arguments {

[[noreturn]] void bad(const LessonAction& a, const QString& why) {
  throw BadArgument(QString("%1: %2").arg(a.name, why).toStdString());
}

QString text_argument(const LessonAction& a) {
  if (!a.argument.canConvert<QString>() || a.argument.toString().isEmpty()) {
    bad(a, "needs a value");
  }
  return a.argument.toString();
}

// A whole number in the range the lesson vocabulary gives it (one range for the lesson
// validator and the window): the action's own argument, or one of its fields.
namespace {

int int_argument(const LessonAction& a, const QVariant& value, int64_t low, int64_t high,
                 const QString& what) {
  bool ok = false;
  const int v = value.toInt(&ok);
  if (!ok || v < low || v > high) {
    bad(a, QString("%1 a whole number from %2 to %3").arg(what).arg(low).arg(high));
  }
  return v;
}

}  // namespace

const lessons::ActionSpec& spec_of(const LessonAction& a) {
  const lessons::ActionSpec* spec = lessons::find_action(a.name.toStdString());
  if (spec == nullptr) bad(a, "is not an action of the lesson vocabulary");
  return *spec;
}

int int_argument(const LessonAction& a) {
  const lessons::ActionSpec& spec = spec_of(a);
  return int_argument(a, a.argument, spec.min, spec.max, "needs");
}

int int_field(const LessonAction& a, const QVariant& value, std::string_view field) {
  const lessons::ActionSpec& spec = spec_of(a);
  const auto it = std::find_if(spec.fields.begin(), spec.fields.end(),
                               [&](const lessons::FieldSpec& f) { return f.name == field; });
  if (it == spec.fields.end()) bad(a, "has no whole-number field of that name");
  return int_argument(
      a, value, it->min, it->max,
      QString::fromUtf8(field.data(), static_cast<qsizetype>(field.size())) + " is");
}

bool bool_argument(const LessonAction& a) {
  if (a.argument.typeId() == QMetaType::Bool) return a.argument.toBool();
  const QString s = a.argument.toString();
  if (s == "true") return true;
  if (s == "false") return false;
  bad(a, "needs true or false");
}

QVariantMap map_argument(const LessonAction& a) {
  if (!a.argument.isValid() || a.argument.isNull()) return {};
  if (a.argument.canConvert<QVariantMap>()) return a.argument.toMap();
  bad(a, "needs a map such as {max_tokens: 100}");
}

StaggeredLoad staggered_load_argument(const LessonAction& a) {
  const QVariantMap m = map_argument(a);
  const QString policy = m.value("policy").toString();
  if (policy != "continuous" && policy != "static") {
    bad(a, "policy is continuous or static, not " + policy);
  }
  StaggeredLoad load;
  load.batching.static_batches = policy == "static";
  if (m.contains("wait_ms")) {
    if (!load.batching.static_batches)
      bad(a, "wait_ms needs policy: static (continuous never waits)");
    load.batching.wait_ms = int_field(a, m.value("wait_ms"), "wait_ms");
  }
  load.clients = int_field(a, m.value("clients"), "clients");
  load.rate_per_s = int_field(a, m.value("rate"), "rate");
  return load;
}

std::optional<gguf::GgmlType> parse_kv_type(const QString& s) {
  if (s == "f32") return gguf::GgmlType::F32;
  if (s == "f16") return gguf::GgmlType::F16;
  if (s == "q8_0") return gguf::GgmlType::Q8_0;
  return std::nullopt;
}

}  // namespace servescope::gui::action_arguments
