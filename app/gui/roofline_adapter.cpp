// Roofline panel: every step at (FLOP per byte moved, achieved GFLOP/s) under the device's
// measured roofs.
#include "app/gui/panel_adapter.h"
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
    widgets::RooflineSnapshot snapshot;
    snapshot.device_name = feed.info.device;
    snapshot.cache_gb_per_s = feed.info.cache_gb_per_s;
    snapshot.memory_gb_per_s = feed.info.stream_gb_per_s;
    snapshot.compute_gflop_per_s = feed.info.compute_gflop_per_s;
    for (const telemetry::StepRecord& step : feed.folder.steps()) {
      const double intensity = telemetry::arithmetic_intensity(step);
      const double gflops = telemetry::achieved_gflop_per_s(step);
      if (intensity <= 0.0 || gflops <= 0.0) continue;  // nothing measured to place
      snapshot.points.push_back(
          {step.step_index, phase_of(step), step.sequences, intensity, gflops});
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
