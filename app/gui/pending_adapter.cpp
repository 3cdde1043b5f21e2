// Stand-in for a panel whose view is not built yet: its purpose and the figures the app has.
#include <QLocale>

#include "app/gui/panel_adapter.h"
#include "app/gui/pending_panel.h"
#include "engine/telemetry/records.h"

namespace servescope::gui {
namespace {

QString purpose_of(PanelId id) {
  switch (id) {
    case PanelId::kPhases:
      return "Prefill (many tokens per step) against decode (one token per request per step).";
    case PanelId::kKvCache:
      return "The paged KV cache: blocks taken, shared, freed and evicted as requests come and go.";
    case PanelId::kBatching:
      return "Which requests share each step, and what batching does to throughput and latency.";
    case PanelId::kQuantisation:
      return "What lower-precision weights and KV cache cost in accuracy and save in bytes.";
    case PanelId::kRoofline:
      return "Each step's arithmetic intensity against the compute it achieved.";
    case PanelId::kAttention:
      return "The last step's attention weights for one layer and head.";
  }
  return {};
}

QString number(double value, int decimals = 0) {
  return QLocale::system().toString(value, 'f', decimals);
}

QStringList summary_lines(PanelId id, const TelemetryFolder& folder, const EngineInfo& info) {
  const FoldCounts& c = folder.counts();
  if (folder.steps().empty() && id != PanelId::kQuantisation) return {};
  const telemetry::StepRecord* last = folder.steps().empty() ? nullptr : &folder.steps().back();
  switch (id) {
    case PanelId::kPhases:
      return {QString("steps: %1").arg(c.steps),
              QString("prefill tokens: %1").arg(c.prefill_tokens),
              QString("decode tokens: %1").arg(c.decode_tokens),
              QString("last step: %1 ms").arg(number(last->wall_ms, 2))};
    case PanelId::kKvCache:
      return {QString("blocks used: %1 of %2").arg(folder.blocks_used()).arg(info.kv_blocks),
              QString("bytes used: %1").arg(number(static_cast<double>(folder.kv_bytes_used()))),
              QString("KV events: %1").arg(c.kv_events)};
    case PanelId::kBatching:
      return {QString("last batch: %1 of %2 slots").arg(last->sequences).arg(last->max_batch_size),
              QString("requests finished: %1").arg(c.requests)};
    case PanelId::kQuantisation:
      return {QString("weights: %1 bytes").arg(number(static_cast<double>(info.weight_bytes))),
              QString("KV cache type: %1")
                  .arg(QString::fromUtf8(serving::kv_type_name(info.kv_type).data()))};
    case PanelId::kRoofline:
      return {
          QString("last step: %1 FLOP/byte").arg(number(telemetry::arithmetic_intensity(*last), 2)),
          QString("achieved: %1 GFLOP/s").arg(number(telemetry::achieved_gflop_per_s(*last), 2))};
    case PanelId::kAttention:
      return {QString("layers: %1, heads: %2").arg(info.n_layers).arg(info.n_heads)};
  }
  return {};
}

}  // namespace

namespace {

class PendingAdapter final : public PanelAdapter {
 public:
  PendingAdapter(PanelId id, QWidget* parent)
      : id_(id),
        panel_(
            new PendingPanel(QString::fromUtf8(panel_title(id).data()), purpose_of(id), parent)) {}
  widgets::PanelView* view() const override { return panel_; }
  bool has_data() const override { return !panel_->lines().isEmpty(); }
  void refresh(const PanelFeed& feed) override {
    panel_->set_lines(summary_lines(id_, feed.folder, feed.info));
  }

 private:
  PanelId id_;
  PendingPanel* panel_;
};

}  // namespace

std::unique_ptr<PanelAdapter> make_pending_adapter(PanelId id, QWidget* parent) {
  return std::make_unique<PendingAdapter>(id, parent);
}

}  // namespace servescope::gui
