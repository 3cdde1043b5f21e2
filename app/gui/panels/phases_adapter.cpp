// Phases panel: one bar per engine step.
#include <algorithm>

#include "app/gui/panels/panel_adapter.h"
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
  static constexpr double kIdleGapMs = 2000.0;

  explicit PhasesAdapter(QWidget* parent) : panel_(new widgets::PhasesPanel(parent)) {}
  widgets::PanelView* view() const override { return panel_; }
  bool has_data() const override { return !panel_->snapshot().steps.empty(); }

  void refresh(const PanelFeed& feed) override {
    // The steps since the engine last sat idle: a lesson's run fills the chart instead of
    // being a sliver at the end of the session, and the rates are of the same steps.
    const auto& all = feed.folder.steps();
    const auto first =
        static_cast<std::ptrdiff_t>(telemetry::first_step_after_idle(all, kIdleGapMs));
    const std::ranges::subrange shown(all.begin() + first, all.end());
    widgets::PhasesSnapshot snapshot;
    for (const telemetry::StepRecord& step : shown) snapshot.steps.push_back(step_bar(step));
    snapshot.prefill_tokens_per_s =
        telemetry::throughput_tokens_per_s(telemetry::prefill_step_totals(shown));
    snapshot.decode_tokens_per_s =
        telemetry::throughput_tokens_per_s(telemetry::decode_step_totals(shown));
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
