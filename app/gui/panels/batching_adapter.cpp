// Batching panel: the slots x steps heatmap from each step's batch, latencies per request.
#include "app/gui/panels/panel_adapter.h"
#include "app/gui/window/window_text.h"
#include "engine/telemetry/metrics.h"
#include "widgets/batching_panel.h"

namespace servescope::gui {
namespace {

widgets::SlotState slot_state(telemetry::SequencePhase phase) {
  switch (phase) {
    case telemetry::SequencePhase::kPrefill:
      return widgets::SlotState::kPrefill;
    case telemetry::SequencePhase::kDecode:
      return widgets::SlotState::kDecode;
    case telemetry::SequencePhase::kRecompute:
      return widgets::SlotState::kRecompute;
  }
  return widgets::SlotState::kEmpty;
}

// Its TTFT and TPOT, and the TPOT split over the steps it rode (those still in the folder).
widgets::RequestLatency latency(const telemetry::RequestRecord& r,
                                const std::deque<telemetry::StepRecord>& steps) {
  const telemetry::TpotBreakdown tpot = telemetry::tpot_breakdown(r, steps);
  widgets::RequestLatency out{r.request_id, telemetry::time_to_first_token_ms(r), tpot.tpot_ms,
                              telemetry::output_tokens(r), true};
  out.tpot_steps = tpot.steps;
  out.tpot_step_ms = tpot.mean_step_ms;
  out.tpot_gap_ms = tpot.gap_ms;
  return out;
}

class BatchingAdapter final : public PanelAdapter {
 public:
  explicit BatchingAdapter(QWidget* parent) : panel_(new widgets::BatchingPanel(parent)) {}
  widgets::PanelView* view() const override { return panel_; }
  bool has_data() const override { return !panel_->snapshot().steps.empty(); }
  bool animating() const override { return !panel_->snapshot().collecting.isEmpty(); }

  void refresh(const PanelFeed& feed) override {
    widgets::BatchingSnapshot snapshot;
    snapshot.slot_count = static_cast<int32_t>(feed.info.max_batch_size);
    snapshot.policy = batching_text(feed.batching);
    snapshot.collecting = feed.collecting;
    snapshot.help = metric_help();
    snapshot.pacing_note = pacing_note(feed.speed);
    snapshot.own_requests = widgets::OwnRequests(feed.folder.own_requests());
    for (const telemetry::StepRecord& step : feed.folder.steps()) {
      widgets::BatchStep row;
      row.index = step.step_index;
      row.cells.resize(static_cast<size_t>(snapshot.slot_count));
      for (const telemetry::BatchEntry& entry : step.batch) {
        if (entry.slot < 0 || entry.slot >= snapshot.slot_count) continue;
        row.cells[static_cast<size_t>(entry.slot)] = {entry.sequence, slot_state(entry.phase)};
      }
      snapshot.steps.push_back(std::move(row));
    }
    for (const telemetry::RequestRecord& request : feed.folder.requests()) {
      if (telemetry::output_tokens(request) > 1) {
        snapshot.requests.push_back(latency(request, feed.folder.steps()));
      }
    }
    if (feed.batch_sweep != nullptr) {
      snapshot.sweep_workload = batch_sweep_workload_text();
      for (const BatchSweepPoint& p : *feed.batch_sweep) {
        snapshot.sweep.push_back({p.max_batch, p.tokens_per_s(), p.decode_step_ms(),
                                  p.tokens_per_step(), p.fastest_step_ms, p.slowest_step_ms});
      }
    }
    panel_->set_snapshot(std::move(snapshot));
  }

 private:
  widgets::BatchingPanel* panel_;
};

}  // namespace

std::unique_ptr<PanelAdapter> make_batching_adapter(QWidget* parent) {
  return std::make_unique<BatchingAdapter>(parent);
}

}  // namespace servescope::gui
