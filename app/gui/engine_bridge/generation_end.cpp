#include "app/gui/engine_bridge/generation_end.h"

#include <array>
#include <utility>

namespace servescope::gui {

namespace {

constexpr std::array<std::pair<GenerationEnd, const char*>, 12> kNames = {{
    {GenerationEnd::kMaxTokens, "max_tokens"},
    {GenerationEnd::kStopToken, "stop_token"},
    {GenerationEnd::kContextFull, "context_full"},
    {GenerationEnd::kCancelled, "cancelled"},
    {GenerationEnd::kStopped, "stopped"},
    {GenerationEnd::kModelChanged, "model changed"},
    {GenerationEnd::kWeightsChanged, "weights changed"},
    {GenerationEnd::kKvTypeChanged, "KV precision changed"},
    {GenerationEnd::kKvCacheSwitchedOn, "KV cache switched on"},
    {GenerationEnd::kKvCacheSwitchedOff, "KV cache switched off"},
    {GenerationEnd::kKvBudgetChanged, "KV budget changed"},
    {GenerationEnd::kFailed, "failed"},
}};

}  // namespace

GenerationEnd generation_end_of(telemetry::FinishReason reason) {
  switch (reason) {
    case telemetry::FinishReason::kMaxTokens:
      return GenerationEnd::kMaxTokens;
    case telemetry::FinishReason::kStopToken:
      return GenerationEnd::kStopToken;
    case telemetry::FinishReason::kContextFull:
      return GenerationEnd::kContextFull;
    case telemetry::FinishReason::kNone:  // not finished: only a cancel ends it unfinished
    case telemetry::FinishReason::kCancelled:
      break;
  }
  return GenerationEnd::kCancelled;
}

bool ran_to_its_end(GenerationEnd end) {
  return end == GenerationEnd::kMaxTokens || end == GenerationEnd::kStopToken ||
         end == GenerationEnd::kContextFull;
}

QString generation_end_name(GenerationEnd end) {
  for (const auto& [value, name] : kNames) {
    if (value == end) return QString::fromUtf8(name);
  }
  return QStringLiteral("failed");
}

std::optional<GenerationEnd> parse_generation_end(const QString& name) {
  for (const auto& [value, text] : kNames) {
    if (name == QLatin1String(text)) return value;
  }
  return std::nullopt;
}

}  // namespace servescope::gui
