#include "app/gui/panels/panel_host.h"

#include <utility>

namespace servescope::gui {

PanelHost::PanelHost(QWidget* parent,
                     std::function<void(int layer, int head)> on_attention_selection) {
  for (const PanelId id : kAllPanels) {
    std::unique_ptr<PanelAdapter> adapter;
    switch (id) {
      case PanelId::kPhases:
        adapter = make_phases_adapter(parent);
        break;
      case PanelId::kKvCache:
        adapter = make_kv_cache_adapter(parent);
        break;
      case PanelId::kBatching:
        adapter = make_batching_adapter(parent);
        break;
      case PanelId::kRoofline:
        adapter = make_roofline_adapter(parent);
        break;
      case PanelId::kAttention:
        adapter = make_attention_adapter(parent, on_attention_selection);
        break;
      case PanelId::kQuantisation:
        adapter = make_quantisation_adapter(parent);
        break;
      case PanelId::kTimeline:
        adapter = make_timeline_adapter(parent);
        break;
    }
    // A chart is pictures to a screen reader: its title names it.
    adapter->view()->setAccessibleName(panel_title_text(id));
    adapters_[static_cast<size_t>(id)] = std::move(adapter);
  }
}

PanelHost::~PanelHost() = default;

PanelMask panels_with_news(const FoldRevisions& now, FoldRevisions& seen) {
  const FoldRevisions before = std::exchange(seen, now);
  if (now.resets != before.resets) return kAllPanelBits;
  PanelMask news = 0;
  if (now.steps != before.steps) {
    news |= panel_bit(PanelId::kPhases) | panel_bit(PanelId::kBatching) |
            panel_bit(PanelId::kRoofline) | panel_bit(PanelId::kKvCache) |
            panel_bit(PanelId::kTimeline);
  }
  if (now.requests != before.requests) {
    news |= panel_bit(PanelId::kBatching) | panel_bit(PanelId::kTimeline);
  }
  if (now.arrivals != before.arrivals) news |= panel_bit(PanelId::kTimeline);
  if (now.kv_events != before.kv_events) news |= panel_bit(PanelId::kKvCache);
  return news;
}

void PanelHost::refresh(const PanelFeed& feed, PanelMask changed) {
  // Only panels on screen get snapshots; the others catch up when they are shown.
  pending_ |= changed;
  for (const PanelId id : kAllPanels) {
    PanelAdapter& a = adapter(id);
    const bool due = (pending_ & panel_bit(id)) != 0 || a.animating();
    if (!due || !a.view()->isVisible()) continue;
    a.refresh(feed);
    pending_ &= ~panel_bit(id);
    ++updates_[static_cast<size_t>(id)];
  }
}

}  // namespace servescope::gui
