// The definitions of the figures the panels show, as the engine's telemetry writes them
// (engine/telemetry/metrics.h): the app fills them in and the panels put them in their
// tooltips, so no tooltip defines a figure its own way. Empty texts leave a tooltip out.
#pragma once

#include <QString>

namespace servescope::widgets {

struct MetricHelp {
  QString throughput;
  QString step_time;
  QString ttft;
  QString tpot;
  QString occupancy;
  QString bytes_per_step;
};

// Joined with a space: a tooltip's own words, then a figure's definition.
inline QString with_definition(const QString& text, const QString& definition) {
  return definition.isEmpty() ? text : text + QLatin1Char(' ') + definition;
}

}  // namespace servescope::widgets
