// The lesson measures (the measure vocabulary of app/lessons): scalars read from what the
// window has measured, the folded telemetry, the engine's facts, the batch sweep and a size
// sweep. Nothing is estimated here: a measure the window has not measured yet has no value
// and says what to run.
#pragma once

#include <QString>
#include <QVector>
#include <deque>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "app/gui/engine_bridge/engine_types.h"
#include "app/gui/engine_bridge/quant_lab.h"
#include "app/gui/panels/telemetry_folder.h"

namespace servescope::gui {

class MainWindow;

// One timing model of a size sweep: its weight bytes and the decode time per token measured on
// it (batch 1, no classmates).
struct SizeSweepPoint {
  QString label;  // "25M"
  uint64_t weight_bytes = 0;
  double decode_ms_per_token = 0.0;
  double decode_flops_per_token = 0.0;  // the engine's count for those steps
};

// What the measures are read from.
struct MeasureInputs {
  const TelemetryFolder* folder = nullptr;
  const EngineInfo* engine = nullptr;  // nullptr before a model is loaded
  int64_t user_request = -1;
  const QVector<BatchSweepPoint>* batch_sweep = nullptr;
  const std::vector<SizeSweepPoint>* size_sweep = nullptr;
  // The folder's counts when the experiment started: evictions and preemptions are counted
  // from there (nullptr: since the engine started).
  const FoldCounts* since = nullptr;
  // The quantisation lab's last report (nullptr before one) and the row of its comparison the
  // variant_* measures read: "baseline" or a weight type ("q4_0").
  const QuantLabReport* quant_lab = nullptr;
  std::string variant = {};
  const StaggeredLoadResult* staggered_load = nullptr;  // nullptr before one finished
};

MeasureInputs measure_inputs(const MainWindow& window, const std::vector<SizeSweepPoint>& sizes,
                             const FoldCounts* since = nullptr, std::string variant = {});

struct MeasureValue {
  std::optional<double> value;
  QString unit;     // "bytes", "ms", "GB/s", ...
  QString missing;  // when there is no value: what to run first
};

// Every measure name read_measure knows, in the vocabulary's order.
const std::vector<std::string_view>& implemented_measures();

// The named measure; an unknown name has no value and says so.
MeasureValue read_measure(const MeasureInputs& inputs, std::string_view name);

// A slope robust to outliers (a busy machine's preempted steps): the medians of the third of
// the points with the smallest x and of the third with the largest, joined. nullopt below three
// points or with one x.
std::optional<double> thirds_slope(std::vector<std::pair<double, double>> xy);
// The least-squares slope of y against x; nullopt with fewer than two points or one x.
std::optional<double> least_squares_slope(const std::vector<std::pair<double, double>>& xy);

// The bandwidth a size sweep implies: the least-squares slope of decode time against weight
// bytes, inverted (bytes per ms -> GB/s). nullopt with fewer than two sizes or a slope <= 0.
std::optional<double> fitted_bandwidth_gbs(const std::vector<SizeSweepPoint>& points);
// The same line against FLOPs per token: the arithmetic rate it implies (GFLOP/s). FLOPs grow
// with bytes too, so a straight line alone proves nothing; which roof the rates are near does.
std::optional<double> fitted_gflop_per_s(const std::vector<SizeSweepPoint>& points);

// What a decode step (telemetry::is_decode_step) read and did, on average over the steps.
struct DecodeStepMeans {
  double weight_bytes_read = 0.0;  // every matrix, but one embedding row per token
  double flops_per_token = 0.0;
};
std::optional<DecodeStepMeans> mean_decode_step(const std::deque<telemetry::StepRecord>& steps);

}  // namespace servescope::gui
