// Timeline panel: each request's life from the folder's timeline, with its TTFT and TPOT by
// the metrics' one definition.
#include "app/gui/panels/panel_adapter.h"
#include "app/gui/window/window_text.h"
#include "engine/telemetry/metrics.h"
#include "engine/telemetry/request_timeline.h"
#include "widgets/timeline_panel.h"

namespace servescope::gui {
namespace {

widgets::LifeStageView stage_view(telemetry::LifeStage stage) {
  switch (stage) {
    case telemetry::LifeStage::kQueued:
      return widgets::LifeStageView::kQueued;
    case telemetry::LifeStage::kPrefill:
      return widgets::LifeStageView::kPrefill;
    case telemetry::LifeStage::kDecode:
      return widgets::LifeStageView::kDecode;
    case telemetry::LifeStage::kPreempted:
      return widgets::LifeStageView::kPreempted;
    case telemetry::LifeStage::kRecompute:
      return widgets::LifeStageView::kRecompute;
  }
  return widgets::LifeStageView::kQueued;
}

widgets::RequestLifeRow life_row(const telemetry::RequestLife& life) {
  const telemetry::RequestRecord& r = life.record;
  widgets::RequestLifeRow row;
  row.request = life.request_id;
  row.arrival_ms = r.arrival_ms;
  row.first_token_ms = r.token_times_ms.empty() ? -1.0 : r.token_times_ms.front();
  row.ttft_ms = telemetry::time_to_first_token_ms(r);
  row.tpot_ms = telemetry::time_per_output_token_ms(r);
  row.output_tokens = telemetry::output_tokens(r);
  row.finished = life.finished;
  row.finish_reason =
      QString::fromUtf8(telemetry::finish_reason_name(r.finish_reason)).replace('_', ' ');
  for (const telemetry::LifeStretch& s : life.stretches) {
    row.bars.push_back({stage_view(s.stage), s.start_ms, s.end_ms, s.steps, s.tokens});
  }
  return row;
}

class TimelineAdapter final : public PanelAdapter {
 public:
  // More rows than the tallest screen shows at the panel's smallest row height.
  static constexpr size_t kMostRows = 200;

  explicit TimelineAdapter(QWidget* parent) : panel_(new widgets::TimelinePanel(parent)) {}
  widgets::PanelView* view() const override { return panel_; }
  bool has_data() const override { return !panel_->snapshot().rows.empty(); }

  void refresh(const PanelFeed& feed) override {
    widgets::TimelineSnapshot snapshot;
    snapshot.policy = batching_text(feed.batching);
    snapshot.help = metric_help();
    snapshot.pacing_note = pacing_note(feed.speed);
    snapshot.own_requests = widgets::OwnRequests(feed.folder.own_requests());
    const telemetry::RequestTimeline& timeline = feed.folder.timeline();
    snapshot.now_ms = timeline.now_ms();
    for (const telemetry::RequestLife* life : timeline.lives(kMostRows)) {
      snapshot.rows.push_back(life_row(*life));
    }
    panel_->set_snapshot(std::move(snapshot));
  }

 private:
  widgets::TimelinePanel* panel_;
};

}  // namespace

std::unique_ptr<PanelAdapter> make_timeline_adapter(QWidget* parent) {
  return std::make_unique<TimelineAdapter>(parent);
}

}  // namespace servescope::gui
