// One adapter per panel turns what the app knows (the folded telemetry, the engine's facts)
// into that panel's snapshot. Each lives in its own file and includes only its own panel's
// header, so the app is the one place that knows both the engine's records and the widgets.
#pragma once

#include <QWidget>
#include <functional>
#include <memory>

#include "app/gui/engine_bridge/engine_types.h"
#include "app/gui/engine_bridge/quant_lab.h"
#include "app/gui/panels/panel_id.h"
#include "app/gui/panels/telemetry_folder.h"
#include "widgets/metric_help.h"
#include "widgets/panel_view.h"

namespace servescope::gui {

struct PanelFeed {
  const TelemetryFolder& folder;
  const EngineInfo& info;
  double now_ms = 0.0;                                    // the consumer's clock (the folder's)
  const AttentionSample* attention = nullptr;             // the newest capture, if any
  const QuantLabReport* quant_lab = nullptr;              // the loaded model's, once measured
  const widgets::QuantRunState* quant_run = nullptr;      // its comparison now
  QStringList quant_types;                                // the weight types it compares
  const QVector<BatchSweepPoint>* batch_sweep = nullptr;  // the last sweep, if any
  QString collecting;  // "collecting a batch: 3 of 16, runs in 120 ms", or empty
  const widgets::QuantLimits* quant_limits = nullptr;  // the user's (null: the lab's defaults)
  Speed speed = Speed::kRealTime;  // the engine's pace now (the panels say times stay real)
  MeasuredMemory memory = {};      // the engine's device memory as last measured
  BatchingChoice batching = {};    // the engine's batching now
};

// The figures' definitions from engine/telemetry/metrics.h, for the panels' tooltips.
widgets::MetricHelp metric_help();
// "Slow motion: times are real ...", or empty at real time.
QString pacing_note(Speed speed);

class PanelAdapter {
 public:
  virtual ~PanelAdapter() = default;
  virtual widgets::PanelView* view() const = 0;
  // Builds the snapshot from the feed and hands it to the panel.
  virtual void refresh(const PanelFeed& feed) = 0;
  // Whether the panel needs a refresh next frame even without new records (an animation).
  virtual bool animating() const { return false; }
  // Whether the last snapshot holds measured data (not the empty state).
  virtual bool has_data() const = 0;
};

std::unique_ptr<PanelAdapter> make_phases_adapter(QWidget* parent);
std::unique_ptr<PanelAdapter> make_kv_cache_adapter(QWidget* parent);
std::unique_ptr<PanelAdapter> make_roofline_adapter(QWidget* parent);
std::unique_ptr<PanelAdapter> make_batching_adapter(QWidget* parent);
// on_selection: the user chose another layer or head in the panel.
std::unique_ptr<PanelAdapter> make_attention_adapter(
    QWidget* parent, std::function<void(int layer, int head)> on_selection);
std::unique_ptr<PanelAdapter> make_quantisation_adapter(QWidget* parent);
std::unique_ptr<PanelAdapter> make_timeline_adapter(QWidget* parent);

}  // namespace servescope::gui
