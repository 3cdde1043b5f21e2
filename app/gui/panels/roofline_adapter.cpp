// Roofline panel: every step at (FLOP per byte moved, achieved GFLOP/s) under the device's
// roofs (the probe's, raised by any step that beat them), each judged against the bandwidth roof
// its working set belongs to.
#include "app/gui/engine_bridge/measured_roofs.h"
#include "app/gui/panels/panel_adapter.h"
#include "engine/telemetry/metrics.h"
#include "widgets/roofline_panel.h"

namespace servescope::gui {
namespace {

widgets::StepPhase phase_of(const telemetry::StepRecord& step) {
  if (step.prefill_tokens > 0 && step.decode_tokens > 0) return widgets::StepPhase::kMixed;
  return step.prefill_tokens > 0 ? widgets::StepPhase::kPrefill : widgets::StepPhase::kDecode;
}

class RooflineAdapter final : public PanelAdapter {
 public:
  explicit RooflineAdapter(QWidget* parent) : panel_(new widgets::RooflinePanel(parent)) {}
  widgets::PanelView* view() const override { return panel_; }
  bool has_data() const override { return !panel_->snapshot().points.empty(); }

  void refresh(const PanelFeed& feed) override {
    // The roofs every consumer uses: the probe's, raised by the steps that beat them.
    const compute::StepRoofs roofs = roofs_under_steps(feed.info.roofs, feed.folder.steps());
    widgets::RooflineSnapshot snapshot;
    snapshot.device_name = feed.info.device;
    snapshot.cache_gb_per_s = roofs.cache_gb_per_s;
    snapshot.memory_gb_per_s = roofs.memory_gb_per_s;
    snapshot.compute_gflop_per_s = roofs.compute_gflop_per_s;
    snapshot.cache_raised = roofs.cache_raised;
    snapshot.memory_raised = roofs.memory_raised;
    snapshot.compute_raised = roofs.compute_raised;
    snapshot.cache_raised_by = QString::fromStdString(roofs.cache_raised_by);
    snapshot.memory_raised_by = QString::fromStdString(roofs.memory_raised_by);
    snapshot.compute_raised_by = QString::fromStdString(roofs.compute_raised_by);
    for (const telemetry::StepRecord& step : feed.folder.steps()) {
      const double intensity = telemetry::arithmetic_intensity(step);
      const double gflops = telemetry::achieved_gflop_per_s(step);
      if (intensity <= 0.0 || gflops <= 0.0) continue;  // nothing measured to place
      const bool cache = compute::bandwidth_roof_for(roofs, step.bytes_moved()) ==
                         compute::BandwidthRoofKind::kCache;
      snapshot.points.push_back({step.step_index, phase_of(step), step.sequences, intensity, gflops,
                                 cache ? widgets::PointRoof::kCache : widgets::PointRoof::kMemory});
    }
    panel_->set_snapshot(std::move(snapshot));
  }

 private:
  widgets::RooflinePanel* panel_;
};

}  // namespace

std::unique_ptr<PanelAdapter> make_roofline_adapter(QWidget* parent) {
  return std::make_unique<RooflineAdapter>(parent);
}

}  // namespace servescope::gui
