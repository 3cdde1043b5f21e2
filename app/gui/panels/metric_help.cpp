#include <QCoreApplication>

#include "app/gui/panels/panel_adapter.h"
#include "engine/telemetry/metrics.h"

namespace servescope::gui {
namespace {

QString definition(telemetry::Metric metric) {
  const std::string_view text = telemetry::metric_definition(metric);
  return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

}  // namespace

widgets::MetricHelp metric_help() {
  using telemetry::Metric;
  return {definition(Metric::kThroughput), definition(Metric::kStepTime),
          definition(Metric::kTtft),       definition(Metric::kTpot),
          definition(Metric::kOccupancy),  definition(Metric::kBytesPerStep)};
}

QString pacing_note(Speed speed) {
  switch (speed) {
    case Speed::kSlowMotion:
      return QCoreApplication::translate(
          "Panels",
          "Slow motion: times are real (the pause between steps is not "
          "counted).");
    case Speed::kSingleStep:
      return QCoreApplication::translate(
          "Panels", "Single step: times are real (the wait for Step is not counted).");
    case Speed::kRealTime:
      break;
  }
  return {};
}

}  // namespace servescope::gui
