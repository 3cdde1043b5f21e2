// Reading a lesson action's argument as its action needs it (a text, a whole number in the
// range the lesson vocabulary gives, true or false, a map of fields), or refusing it with a
// reason that names the action: BadArgument, and the run does not start.
#pragma once

#include <QString>
#include <QVariant>
#include <QVariantMap>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "app/gui/engine_bridge/engine_types.h"
#include "app/gui/lesson_ui/action_dispatcher.h"
#include "app/lessons/vocabulary.h"
#include "engine/gguf/ggml_types.h"

namespace servescope::gui::action_arguments {

// A lesson's argument that does not fit its action; the run does not start.
class BadArgument : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void bad(const LessonAction& a, const QString& why);
QString text_argument(const LessonAction& a);
// The action's whole-number argument, in its vocabulary range.
int int_argument(const LessonAction& a);
// A whole-number field of the action's map, in the field's vocabulary range.
int int_field(const LessonAction& a, const QVariant& value, std::string_view field);
bool bool_argument(const LessonAction& a);
QVariantMap map_argument(const LessonAction& a);
const lessons::ActionSpec& spec_of(const LessonAction& a);
// staggered_load's fields: a policy, its wait (static only), the clients and their rate.
StaggeredLoad staggered_load_argument(const LessonAction& a);
// "f32", "f16", "q8_0": a KV cache type.
std::optional<gguf::GgmlType> parse_kv_type(const QString& s);

}  // namespace servescope::gui::action_arguments
