// KV-cache panel: the block pool as the events left it, the formula's numbers of this model,
// per-layer bytes and the device memory by purpose.
#include <algorithm>
#include <cmath>

#include "app/gui/panels/panel_adapter.h"
#include "widgets/kv_cache_panel.h"

namespace servescope::gui {
namespace {

constexpr double kFrameMs = 1000.0 / 60.0;

widgets::KvBlockEvent block_event(telemetry::KvEventKind kind) {
  using telemetry::KvEventKind;
  switch (kind) {
    case KvEventKind::kAllocate:
    case KvEventKind::kAppend:
      return widgets::KvBlockEvent::kAllocate;
    case KvEventKind::kPrefixHit:
      return widgets::KvBlockEvent::kPrefixHit;
    case KvEventKind::kFree:
      return widgets::KvBlockEvent::kFree;
    case KvEventKind::kPreempt:
      return widgets::KvBlockEvent::kPreempt;
    case KvEventKind::kEvict:
      return widgets::KvBlockEvent::kEvict;
    case KvEventKind::kWrite:
      return widgets::KvBlockEvent::kWrite;
    case KvEventKind::kFork:
      return widgets::KvBlockEvent::kFork;
    case KvEventKind::kCopyOnWrite:
      return widgets::KvBlockEvent::kCopyOnWrite;
    case KvEventKind::kIndex:
      return widgets::KvBlockEvent::kNone;  // no visible change
  }
  return widgets::KvBlockEvent::kNone;
}

// Bytes of one key or value element as the cache stores it (Q8_0: 34 bytes per 32 elements).
double bytes_per_element(gguf::GgmlType type) {
  return static_cast<double>(gguf::row_bytes(type, gguf::kQuantBlock)) / gguf::kQuantBlock;
}

class KvCacheAdapter final : public PanelAdapter {
 public:
  explicit KvCacheAdapter(QWidget* parent) : panel_(new widgets::KvCachePanel(parent)) {}
  widgets::PanelView* view() const override { return panel_; }
  bool has_data() const override { return has_data_; }
  bool animating() const override { return panel_->highlighted_block_count() > 0; }

  void refresh(const PanelFeed& feed) override {
    const EngineInfo& info = feed.info;
    widgets::KvCacheSnapshot snapshot;
    snapshot.block_size = static_cast<int32_t>(info.block_size);
    snapshot.own_requests = widgets::OwnRequests(feed.folder.own_requests());
    for (const FoldedBlock& folded : feed.folder.blocks()) {
      widgets::KvBlock block;
      block.owner = folded.ref_count > 0 ? folded.owner : -1;
      block.ref_count = folded.ref_count;
      block.fill = static_cast<int32_t>(folded.fill);
      block.cached_prefix = folded.ref_count == 0 && folded.cached_prefix;
      if (folded.last_event) {
        block.last_event = block_event(*folded.last_event);
        block.event_age_frames =
            static_cast<int32_t>(std::lround((feed.now_ms - folded.last_event_ms) / kFrameMs));
      }
      snapshot.blocks.push_back(block);
    }
    snapshot.model = {info.n_layers, info.n_kv_heads, info.head_dim,
                      bytes_per_element(info.kv_type),
                      QString::fromUtf8(gguf::type_name(info.kv_type).data())};
    for (const KvFillPoint& point : feed.folder.kv_fill()) {
      snapshot.history.push_back(
          {point.retained_tokens, static_cast<double>(point.allocated_bytes)});
    }
    // Every layer holds the same rows per token, so each holds an equal share of the bytes.
    const double allocated = static_cast<double>(feed.folder.kv_bytes_used());
    for (int64_t layer = 0; layer < info.n_layers; ++layer) {
      const double half = allocated / static_cast<double>(info.n_layers) / 2.0;
      snapshot.layers.push_back({half, half});
    }
    snapshot.memory.device = info.device;
    const MeasuredMemory& measured = feed.memory;
    snapshot.memory.weights_bytes = static_cast<double>(
        measured.weights_bytes > 0 ? measured.weights_bytes : info.weight_bytes);
    snapshot.memory.kv_cache_bytes =
        static_cast<double>(measured.kv_bytes > 0 ? measured.kv_bytes : info.kv_bytes_total);
    snapshot.memory.working_bytes = static_cast<double>(measured.working_bytes);
    snapshot.reservation = reservation(feed);
    has_data_ = feed.folder.counts().kv_events > 0;
    panel_->set_snapshot(std::move(snapshot));
  }

 private:
  // The live requests' blocks against reserving each one's longest length up front.
  static widgets::KvReservation reservation(const PanelFeed& feed) {
    const std::vector<serving::HeldRequest> held = feed.folder.held_requests();
    widgets::KvReservation r;
    r.known =
        std::ranges::all_of(held, [](const serving::HeldRequest& h) { return h.longest > 0; });
    const serving::ReservationComparison c = serving::compare_with_reservation(
        held, feed.info.kv_bytes_per_token, feed.info.kv_bytes_total);
    r.requests = c.requests;
    r.used_bytes = static_cast<double>(c.used_bytes);
    r.paged_bytes = static_cast<double>(feed.folder.kv_bytes_used());
    r.paged_used_bytes = static_cast<double>(feed.folder.retained_tokens()) *
                         static_cast<double>(feed.info.kv_bytes_per_token);
    r.reserved_bytes = static_cast<double>(c.reserved_bytes);
    r.capacity_bytes = static_cast<double>(c.capacity_bytes);
    r.would_not_fit = c.would_not_fit;
    return r;
  }

  widgets::KvCachePanel* panel_;
  bool has_data_ = false;
};

}  // namespace

std::unique_ptr<PanelAdapter> make_kv_cache_adapter(QWidget* parent) {
  return std::make_unique<KvCacheAdapter>(parent);
}

}  // namespace servescope::gui
