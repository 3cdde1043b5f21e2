// Why the user's generation ended, as one type from the engine thread to the window, the
// lessons and the recording: the engine's own finish reasons, or what the window did to the
// engine under it (a new model, new weights, a KV change, Stop, a failed step).
#pragma once

#include <QMetaType>
#include <QString>
#include <optional>

#include "engine/telemetry/records.h"

namespace servescope::gui {

enum class GenerationEnd {
  kMaxTokens,  // the engine's reasons (telemetry::FinishReason)
  kStopToken,
  kContextFull,
  kCancelled,
  kStopped,  // Stop
  kModelChanged,
  kWeightsChanged,
  kKvTypeChanged,
  kKvCacheSwitchedOn,
  kKvCacheSwitchedOff,
  kKvBudgetChanged,
  kFailed,  // a step failed and the engine was rebuilt
};

GenerationEnd generation_end_of(telemetry::FinishReason reason);

// The request ran as far as it could (Max tokens, its end-of-text token, a full context),
// rather than being cut short.
bool ran_to_its_end(GenerationEnd end);

// The name a recording stores: the engine's finish_reason_name for its reasons
// ("max_tokens"), words for the others ("model changed"), as recordings always held them.
QString generation_end_name(GenerationEnd end);
std::optional<GenerationEnd> parse_generation_end(const QString& name);

}  // namespace servescope::gui

Q_DECLARE_METATYPE(servescope::gui::GenerationEnd)
