// The six panels and the one place that turns folded telemetry into their snapshots. The
// frame timer calls refresh() once per frame with the panels whose data changed, so each
// panel's set_snapshot runs at most once per frame.
#pragma once

#include <QObject>
#include <array>
#include <cstdint>

#include "app/gui/engine_types.h"
#include "app/gui/panel_id.h"
#include "app/gui/telemetry_folder.h"
#include "widgets/panel_view.h"

namespace servescope::gui {

class PanelHost {
 public:
  explicit PanelHost(QWidget* parent);

  widgets::PanelView* panel(PanelId id) const { return panels_[static_cast<size_t>(id)]; }
  // Snapshots of the changed panels from the folder and the engine's facts.
  void refresh(const TelemetryFolder& folder, const EngineInfo& info, PanelMask changed);
  // How often each panel received a snapshot since the last reset (for tests and the overlay).
  int64_t updates(PanelId id) const { return updates_[static_cast<size_t>(id)]; }
  void reset_counts() { updates_.fill(0); }

 private:
  std::array<widgets::PanelView*, kAllPanels.size()> panels_{};
  std::array<int64_t, kAllPanels.size()> updates_{};
};

}  // namespace servescope::gui
