// Phases panel: one bar per engine step.
#include <algorithm>

#include "app/gui/panel_adapter.h"
#include "engine/telemetry/metrics.h"
#include "widgets/phases_panel.h"

namespace servescope::gui {
namespace {

widgets::StepBar step_bar(const telemetry::StepRecord& step) {
  widgets::StepBar bar;
  bar.index = step.step_index;
  bar.start_ms = step.start_ms;
  bar.end_ms = step.end_ms;
  for (const telemetry::BatchEntry& entry : step.batch) {
    const int64_t context = entry.start_position + static_cast<int64_t>(entry.tokens.size());
    bar.context_tokens = std::max(bar.context_tokens, context);
  }
  bar.prefill_tokens = step.prefill_tokens;
  bar.decode_tokens = step.decode_tokens;
  bar.sequences = step.sequences;
  const telemetry::KernelTimes& k = step.kernel_times;
  bar.kernels_measured = step.kernel_times_measured;
  bar.matmul_ms = k.matmul_ms;
  bar.attention_ms = k.attention_ms;
  bar.norm_ms = k.norm_ms;
  bar.other_ms = k.other_ms;
  return bar;
}

class PhasesAdapter final : public PanelAdapter {
 public:
  explicit PhasesAdapter(QWidget* parent) : panel_(new widgets::PhasesPanel(parent)) {}
  widgets::PanelView* view() const override { return panel_; }
  bool has_data() const override { return !panel_->snapshot().steps.empty(); }

  void refresh(const PanelFeed& feed) override {
    widgets::PhasesSnapshot snapshot;
    for (const telemetry::StepRecord& step : feed.folder.steps()) {
      snapshot.steps.push_back(step_bar(step));
    }
    snapshot.prefill_tokens_per_s =
        telemetry::throughput_tokens_per_s(telemetry::prefill_step_totals(feed.folder.steps()));
    snapshot.decode_tokens_per_s =
        telemetry::throughput_tokens_per_s(telemetry::decode_step_totals(feed.folder.steps()));
    snapshot.help = metric_help();
    snapshot.pacing_note = pacing_note(feed.speed);
    panel_->set_snapshot(std::move(snapshot));
  }

 private:
  widgets::PhasesPanel* panel_;
};

}  // namespace

std::unique_ptr<PanelAdapter> make_phases_adapter(QWidget* parent) {
  return std::make_unique<PhasesAdapter>(parent);
}

}  // namespace servescope::gui
