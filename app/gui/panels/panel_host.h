// The seven panels and their adapters. The frame timer calls refresh() once per frame with the
// panels whose data changed, so each panel's set_snapshot runs at most once per frame.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "app/gui/panels/panel_adapter.h"

namespace servescope::gui {

// The panels fed by what the folder took in since `seen` (then `seen` is brought up to date):
// steps feed the phases, batching, roofline and KV panels, finished requests the batching
// panel, KV events the KV panel, and a reset every panel.
PanelMask panels_with_news(const FoldRevisions& now, FoldRevisions& seen);

class PanelHost {
 public:
  // on_attention_selection: the attention panel's layer or head changed.
  PanelHost(QWidget* parent, std::function<void(int layer, int head)> on_attention_selection);
  ~PanelHost();

  widgets::PanelView* panel(PanelId id) const { return adapter(id).view(); }
  // Snapshots of the panels on screen whose data changed since they last got one (and of
  // those still animating); hidden panels wait until they are shown.
  void refresh(const PanelFeed& feed, PanelMask changed);
  // How often each panel received a snapshot since the last reset (tests, the overlay).
  int64_t updates(PanelId id) const { return updates_[static_cast<size_t>(id)]; }
  void reset_counts() { updates_.fill(0); }
  // Every panel's zoom and hidden series forgotten (a new engine: its steps start again).
  void reset_views() const {
    for (PanelId id : kAllPanels) panel(id)->reset_view();
  }
  // Whether the panel's current snapshot holds measured data.
  bool has_data(PanelId id) const { return adapter(id).has_data(); }

 private:
  PanelAdapter& adapter(PanelId id) const { return *adapters_[static_cast<size_t>(id)]; }

  std::array<std::unique_ptr<PanelAdapter>, kAllPanels.size()> adapters_;
  std::array<int64_t, kAllPanels.size()> updates_{};
  PanelMask pending_ = 0;
};

}  // namespace servescope::gui
